# Files through the API as a person would use them (sourced by checks.sh
# after the prompt checks: uses start_model and setup_agents of prompt.sh).

files_roundtrip() {
	local sum_in sum_out
	head -c 3000000 /dev/urandom >/tmp/blob.bin
	as alice agorctl files put alice blob.bin </tmp/blob.bin
	want "$(stat -c '%U %s' /home/alice/blob.bin)" "alice 3000000"
	sum_in=$(sha256sum </tmp/blob.bin)
	sum_out=$(as alice agorctl files cat alice blob.bin | sha256sum)
	want "$sum_out" "$sum_in"
	as alice agorctl files ls alice | grep blob.bin >/dev/null
	if out=$(as bob agorctl files cat alice blob.bin 2>&1); then echo "bob read alice's file"; return 1; fi
	echo "bob: $out"
	agorctl audit --user alice --action file_written | grep blob.bin >/dev/null
	echo "3 MB put and cat back as alice (sha256 equal), the file is alice's; bob refused; the write audited"
}
check "as alice, agorctl files put then cat round-trips; the file on disk is alice's" files_roundtrip

files_watch_agent() {
	setup_agents >/dev/null # Claude Code at its stand-in: this concern may run without the prompt concern before it
	mkdir -p /home/alice/proj && chown alice:alice /home/alice/proj
	as alice agorctl files watch alice proj >/tmp/watch.out 2>&1 &
	local w=$!
	sleep 1
	# In the project it watches (the packaged sandbox.prompts: workspace
	# refuses a prompt at her home, and confines this one to proj).
	start_model -bash 'echo from-the-agent > agent.txt' -text 'written.'
	as alice agorctl prompt alice 'write a file' --mode bypassPermissions --cwd proj >/tmp/wprompt.out 2>&1 || { cat /tmp/wprompt.out; kill $w; return 1; }
	for _ in $(seq 50); do grep -q 'proj/agent.txt' /tmp/watch.out && break; sleep 0.1; done
	kill $w 2>/dev/null; wait $w 2>/dev/null || true
	cat /tmp/watch.out
	grep -q '^create proj/agent.txt' /tmp/watch.out
}
check "agorctl files watch as alice shows a file her agent writes" files_watch_agent
