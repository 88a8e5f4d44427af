# The task sandbox (Landlock) under the shipped unit's hardening, seccomp
# filter included (sourced by checks.sh after the prompt checks: uses
# start_model and the agents they set up).

sandbox_prompt() {
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/outside.txt /home/alice/proj/inside.txt
	local before
	before=$(sha256sum </home/alice/.bashrc)
	start_model -bash 'echo in > inside.txt; echo out > ~/outside.txt; echo x >> ~/.bashrc; true' -text 'tried all three.'
	as alice agorctl prompt alice 'write three files' --cwd proj --sandbox workspace --mode bypassPermissions >/tmp/sbx.out 2>&1 ||
		{ cat /tmp/sbx.out; return 1; }
	grep '^completed' /tmp/sbx.out >/dev/null
	want "$(stat -c %U /home/alice/proj/inside.txt)" alice
	if [ -e /home/alice/outside.txt ]; then
		echo "~/outside.txt was written; the task's events and the executor's unit:"
		as alice agorctl events "$(task_of)" | head -n 3
		systemctl show -p SystemCallFilter agor-executor@alice.service | tr ' ' '\n' | grep -c landlock || true
		journalctl -u agor-executor@alice.service -n 5 --no-pager -o cat
		return 1
	fi
	want "$(sha256sum </home/alice/.bashrc)" "$before"
	local task evs
	task=$(task_of)
	evs=$(as alice agorctl events "$task") # whole, so no early-exiting grep breaks the pipe (pipefail)
	grep '"event_type":"sandbox"' <<<"$evs"
	grep '"enforced":true' <<<"$evs" >/dev/null
	agorctl audit --user alice --action task_started | tail -n 1 | grep '"sandbox":"workspace"' >/dev/null ||
		{ echo "no task_started record with the level:"; agorctl audit --user alice --action task_started | tail -n 2; return 1; }
	local doc
	doc=$(agorctl doctor || true) # other checks may warn or fail here; this one is about the sandbox
	grep -E '^ok +sandbox +Landlock ABI [1-9]' <<<"$doc" || { echo "$doc"; return 1; }
	echo "under workspace: proj/inside.txt written (alice's), ~/outside.txt absent, ~/.bashrc unchanged; the task's sandbox event and its audit record say workspace"
}
check "as alice, a prompt under --sandbox workspace cannot write outside its cwd (shipped unit, seccomp included)" sandbox_prompt
