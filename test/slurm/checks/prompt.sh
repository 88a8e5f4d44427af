# alice's prompt: the real Claude Code on a compute node, as alice, against
# the stand-in model the login host serves on the bridge (one tool turn, then
# text-only turns for a resumed session's prompts); her API key comes
# just in time over the dial-back.
start_model() {
	inside login sh -c 'pkill -x demomodel; rm -f /tmp/model.url
		/opt/tests/demomodel -listen 10.213.0.10:18080 -bash "id -un; hostname" -text "Ran it." -plain 4 >/tmp/model.url 2>/tmp/model.log &
		for _ in $(seq 50); do [ -s /tmp/model.url ] && exit 0; sleep 0.1; done; cat /tmp/model.log; exit 1'
}
prompt_on_node() {
	start_model || return 1
	printf 'sk-ant-slurm-0123456789\n' | inside login agorctl creds set ANTHROPIC_API_KEY --daemon >/dev/null || return 1
	local out s task events
	out=$(as login alice agorctl prompt alice 'who and where are you?' --mode bypassPermissions 2>&1)
	echo "$out" | tail -n 3
	echo "$out" | grep '^completed' >/dev/null || return 1
	s=$(as login alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	task=$(as login alice agorctl tasks "$s" --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	events=$(as login alice agorctl events "$task")
	# The Bash tool's output, in the task's events: her account, a node.
	echo "$events" | grep -E 'alice\\nnode[12]' >/dev/null || { echo "$events" | tail -n 5; return 1; }
	echo "task $task ran as alice on $(echo "$events" | grep -oE 'node[12]' | head -n1)"
	! echo "$events" | grep sk-ant-slurm >/dev/null
}
check "alice's prompt runs the real Claude Code as alice on a compute node" prompt_on_node
