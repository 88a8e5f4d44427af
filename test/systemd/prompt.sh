# Prompts as a user: the real Claude Code in alice's executor, a stand-in model. Sourced by checks.sh (uses lib.sh).

# The container has no model API: demomodel (start_model, lib.sh) plays one
# scripted turn on a fixed loopback port, the model gateway's Anthropic
# upstream in the suite's drop-in (lib.sh); /etc/agor/agents.yaml names
# the real CLI (mounted from the host), and its ANTHROPIC_BASE_URL, which
# the packaged gateway replaces with its relay's, is where it would go
# without the gateway (gateway.enabled: false).
# Alice's prompts run in ~/p (the packaged sandbox.prompts: workspace
# refuses one at her home and confines one in ~/p to it).
setup_agents() {
	cat >/etc/agor/agents.yaml <<'YAML'
claude-code:
  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  env:
    ANTHROPIC_BASE_URL: http://127.0.0.1:18080
    CLAUDE_CODE_MAX_RETRIES: "0"
YAML
	printf 'sk-ant-suite-0123456789\n' | agorctl creds set ANTHROPIC_API_KEY --daemon >/dev/null
	stop_executor alice # read agents.yaml afresh (lib.sh)
}
prompt_alice() {
	setup_agents
	start_model -bash 'id -un > whoami.txt; pwd' -text 'I wrote whoami.txt.'
	workspace alice p
	rm -f /home/alice/p/whoami.txt
	local out task n
	out=$(as alice agorctl prompt alice 'who runs this?' --mode bypassPermissions --cwd p 2>&1)
	echo "$out" | sed -n '1,4p;$p'
	echo "$out" | grep '^completed' >/dev/null
	want "$(cat /home/alice/p/whoami.txt)" alice
	want "$(stat -c %U /home/alice/p/whoami.txt)" alice
	# The key reached the model, through the gateway (the agent held a
	# placeholder): the stand-in saw it on every request, and no other.
	want "$(standin_requests | cut -d' ' -f1 | sort -u)" sk-ant-suite-0123456789
	task=$(task_of)
	n=$(as alice agorctl events "$task" | wc -l)
	as alice agorctl events "$task" | grep '"event_type":"tool_call"' >/dev/null
	as alice agorctl events "$task" | grep -c sk-ant-suite >/dev/null && { echo "an event holds the key"; return 1; }
	echo "agorctl events replayed $n events of task $task"
	# The key went to the model only: not the executor's own environment,
	# not the journal (every field), not the audit trail.
	local pid
	pid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	[ "$pid" -gt 0 ] || { echo "alice's executor is not running"; return 1; }
	want "$(tr '\0' '\n' </proc/"$pid"/environ | grep -c sk-ant-suite || true)" 0
	want "$(journalctl --no-pager -o verbose -u agor-daemon.service -u agor-executor@alice.service | grep -c sk-ant-suite || true)" 0
	want "$(grep -c sk-ant-suite /var/lib/agor/audit.jsonl || true)" 0
	echo "the key is in none of: events, executor pid $pid's environment, journal, audit trail"
	if out=$(as bob agorctl events "$task" 2>&1); then echo "bob read alice's events: $out"; return 1; fi
	echo "bob: $out"
	agorctl events "$task" >/dev/null # root, an admin, may
}
check "as alice, agorctl prompt runs the real Claude Code in her executor (uid alice), events stream and replay, the key leaks nowhere; bob cannot read them" prompt_alice

refused_as() { # refused_as USER CMD...: the command must fail; prints why
	local u=$1 out
	shift
	if out=$(as "$u" "$@" 2>&1 </dev/null); then echo "$u could: $* -> $out"; return 1; fi
	echo "$u: $* -> $(echo "$out" | tail -n 1)"
}
authorisation() {
	local s
	s=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	test -n "$s"
	if as bob agorctl sessions --json | grep "$s" >/dev/null; then echo "bob lists alice's session"; return 1; fi
	refused_as bob agorctl tasks "$s"
	refused_as bob agorctl executors start alice
	refused_as bob agorctl exec alice -- id -un
	refused_as bob agorctl prompt alice hello --cwd p # a workspace of hers: refused for whose it is, not the cwd
	refused_as bob agorctl terminal --no-tty --attach term_x alice
	# bob lists his own executor only
	if as bob agorctl executors list | grep '^alice ' >/dev/null; then echo "bob lists alice's executor"; return 1; fi
	refused_as bob sh -c "printf 'sk-x\n' | agorctl creds set ANTHROPIC_API_KEY --daemon" | tee /dev/stderr | grep admin_only >/dev/null
	if as bob agorctl audit | grep '"user":"alice"' >/dev/null; then echo "bob sees alice's audit records"; return 1; fi
	# root (an admin) may act for anyone
	agorctl sessions --user alice --json | grep "$s" >/dev/null
	agorctl tasks "$s" >/dev/null
	want "$(agorctl exec alice -- id -un)" alice
	echo "bob could not see or act on alice's sessions, tasks, executor, terminals or daemon-wide keys; root could"
}
check "authorisation: bob cannot see or act on alice's sessions, tasks, executor, terminals, keys; an admin can" authorisation

# survive_daemon HOW: alice's prompt is in a tool call (an 8 s command the
# stand-in asked for) when the daemon goes (HOW: restart is systemctl
# restart, kill is kill -9). The task belongs to her executor, which runs
# it on; the next daemon takes it over (resume_task). Her agorctl prompt
# carries on and ends completed; the command's file is there; every event
# the executor numbered is stored once, in order (its own count, from its
# journal, against the store's).
survive_daemon() {
	local how=$1 client task pid st n t0
	start_model -bash 'sleep 8; echo survived > survived.txt' -text 'slept'
	rm -f /home/alice/p/survived.txt
	t0=$(date +%s)
	as alice agorctl prompt alice 'take your time' --mode bypassPermissions --cwd p >/tmp/long.out 2>&1 &
	client=$!
	for _ in $(seq 100); do grep -q 'Bash' /tmp/long.out && break; sleep 0.2; done
	grep -q 'Bash' /tmp/long.out || { echo "the tool call never came"; cat /tmp/long.out; return 1; }
	task=$(task_of)
	pid=$(systemctl show -p MainPID --value agor-daemon.service)
	local k0 blind
	k0=$(date +%s%N)
	case $how in
	restart) systemctl restart agor-daemon.service ;;
	kill) kill -9 "$pid" ;;
	esac
	# How long a following client is blind: from the daemon's going to the
	# first answer about the task (the socket queues connections meanwhile).
	for _ in $(seq 300); do as alice agorctl events "$task" --timeout 2s >/dev/null 2>&1 && break; sleep 0.02; done
	blind=$((($(date +%s%N) - k0) / 1000000))
	for _ in $(seq 100); do
		[ "$(systemctl show -p MainPID --value agor-daemon.service)" != "$pid" ] && [ "$(systemctl is-active agor-daemon.service)" = active ] && break
		sleep 0.1
	done
	want "$(systemctl is-active agor-daemon.service)" active
	wait "$client" || { echo "agorctl prompt did not end completed:"; cat /tmp/long.out; journalctl --no-pager -o cat -u agor-daemon.service --since "@$t0" | tail -n 20; return 1; }
	grep '^completed' /tmp/long.out >/dev/null || { cat /tmp/long.out; return 1; }
	grep 'the daemon went away' /tmp/long.out
	st=$(as alice agorctl tasks "$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)" --json | grep -o '"status":"[a-z]*"' | tail -n 1)
	want "$st" '"status":"completed"'
	want "$(cat /home/alice/p/survived.txt)" survived
	n=$(stored_once "$task" "$t0")
	echo "$how of agor-daemon (pid $pid) mid-task: the executor ran the task on, the next daemon took it over; completed, $n events stored once each in order, as many as the executor numbered; a following client was blind $blind ms"
}
check "systemctl restart of the daemon mid-task: the task runs on in the executor, the next daemon takes it over, the client ends completed, every event stored once in order" survive_daemon restart
check "kill -9 of the daemon mid-task: the task runs on in the executor, the next daemon takes it over, the client ends completed, every event stored once in order" survive_daemon kill

# open_question: the id of alice's first open permission question, or "".
# (None yet is no failure: the callers poll, under set -e and pipefail.)
open_question() { { as alice agorctl permissions list 2>/dev/null || true; } | { grep -o '"id":"[^"]*"' || true; } | head -n 1 | cut -d'"' -f4; }

# survive_question: alice's agent asks to run a command (mode default) and
# the daemon restarts while the question is open: the question is not
# answered by the daemon's going, the executor asks the next daemon again,
# and approving it there runs the command.
survive_question() {
	local client id1 id2 _
	start_model -bash 'echo approved > asked.txt' -text 'done'
	rm -f /home/alice/p/asked.txt
	as alice agorctl prompt alice 'ask me first' --mode default --cwd p >/tmp/ask.out 2>&1 </dev/null &
	client=$!
	for _ in $(seq 150); do id1=$(open_question); [ -n "$id1" ] && break; sleep 0.2; done
	test -n "$id1" || { echo "no question was asked"; cat /tmp/ask.out; return 1; }
	systemctl restart agor-daemon.service
	for _ in $(seq 150); do id2=$(open_question); [ -n "$id2" ] && break; sleep 0.2; done
	test -n "$id2" || { echo "the next daemon was not asked again"; cat /tmp/ask.out; return 1; }
	test ! -e /home/alice/p/asked.txt
	as alice agorctl permissions approve "$id2" --reason 'asked again'
	wait "$client" || { echo "agorctl prompt did not end completed:"; cat /tmp/ask.out; return 1; }
	grep '^completed' /tmp/ask.out >/dev/null
	want "$(cat /home/alice/p/asked.txt)" approved
	echo "question $id1 open when the daemon restarted; asked again of the next daemon as $id2, approved there: the command ran, the prompt completed"
}
check "a permission question open across systemctl restart of the daemon is asked again of the next one; approving it there runs the command" survive_question

check "together, restart: alice's prompt, bob's terminal, carol's question across systemctl restart" together_as_allowed restart
check "together, kill -9: alice's prompt, bob's terminal, carol's question across kill -9" together_as_allowed kill

# chaos_daemon: six turns of alice's, each a 3 s command; at a random
# moment of each (1 to 5 s in) the daemon is killed (-9) or restarted,
# alternately. Every turn ends completed, its command ran, and its events
# are stored once each, in order, as many as the executor numbered.
chaos_daemon() {
	local i client task pid seqs n produced t0 delay how kills=""
	start_model -bash 'sleep 3; echo turn >> chaos.txt' -text 'done' -tools 12 -log
	rm -f /home/alice/p/chaos.txt
	for i in 1 2 3 4 5 6; do
		t0=$(date +%s)
		as alice agorctl prompt alice "chaos turn $i" --mode bypassPermissions --cwd p >/tmp/chaos.out 2>&1 </dev/null &
		client=$!
		delay=$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.1f", 1.0 + rand() * 4.0 }')
		sleep "$delay"
		pid=$(systemctl show -p MainPID --value agor-daemon.service)
		if [ $((i % 2)) = 1 ]; then how=kill; kill -9 "$pid"; else how=restart; systemctl restart agor-daemon.service; fi
		kills="$kills $how@${delay}s"
		wait "$client" || {
			echo "turn $i ($how at ${delay}s) did not end completed:"; cat /tmp/chaos.out
			echo "the command ran $(wc -l </home/alice/p/chaos.txt) times; the stand-in's requests:"; tail -n 16 /tmp/model.log
			return 1
		}
		grep '^completed' /tmp/chaos.out >/dev/null
		task=$(task_of)
		seqs=$(as alice agorctl events "$task" | grep -o '"sequence":[0-9]*' | cut -d: -f2)
		n=$(echo "$seqs" | wc -l)
		want "$(echo "$seqs" | sort -n | uniq | wc -l)" "$n"
		want "$(echo "$seqs" | sort -n | tail -n 1)" "$((n - 1))"
		produced=$(journalctl --no-pager -o json -u agor-executor@alice.service --since "@$t0" MESSAGE='task ended' AGOR_TASK="$task" |
			grep -o '"AGOR_EVENTS":"[0-9]*"' | tail -n 1 | grep -o '[0-9]*')
		want "$produced" "$n"
	done
	want "$(wc -l </home/alice/p/chaos.txt)" 6
	echo "six turns, the daemon gone at:$kills; each completed with its events stored once in order (as the executor numbered them); the command ran six times"
}
check "chaos: the daemon killed or restarted at random moments of six turns; every turn completes with each event stored once, in order" chaos_daemon

# timed_prompt ARGS...: runs agorctl prompt --json as alice in ~/p; prints "FIRST_MS TOTAL_MS" (to the
# first event, to the end) and leaves the stream in /tmp/timed.out.
timed_prompt() {
	local t0 first="" line now
	t0=$(date +%s%N)
	: >/tmp/timed.out
	while IFS= read -r line; do
		printf '%s\n' "$line" >>/tmp/timed.out
		if [ -z "$first" ] && [[ $line == *'"event"'* ]]; then
			now=$(date +%s%N)
			first=$(((now - t0) / 1000000))
		fi
	done < <(as alice agorctl prompt alice --json --mode bypassPermissions --cwd p "$@" 2>&1)
	now=$(date +%s%N)
	echo "${first:-none} $(((now - t0) / 1000000))"
}
warm_followup() {
	setup_agents
	start_model -bash 'true' -text 'Ran it.' -plain 2
	local cold warm s
	cold=$(timed_prompt 'remember the word pelican-7')
	grep '"status":"completed"' /tmp/timed.out >/dev/null
	if grep '"warm":true' /tmp/timed.out >/dev/null; then echo "the first prompt ran warm"; return 1; fi
	s=$(grep -o '"session_id":"[0-9a-f]*"' /tmp/timed.out | head -n 1 | cut -d'"' -f4)
	test -n "$s"
	warm=$(timed_prompt --session "$s" 'which word did I give you?')
	grep '"status":"completed"' /tmp/timed.out >/dev/null
	grep '"warm":true' /tmp/timed.out >/dev/null || { echo "the follow-up did not run warm"; tail -n 2 /tmp/timed.out; return 1; }
	echo "claude-code as alice, first event / whole turn: cold prompt ${cold% *} ms / ${cold#* } ms; warm follow-up ${warm% *} ms / ${warm#* } ms"
	[ "${warm% *}" -lt "${cold% *}" ] || { echo "the warm follow-up was not faster"; return 1; }
	# the warm Claude Code process is the executor's child, running as alice
	local pid kids k n=0
	pid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	kids=$(awk -v p="$pid" '$4 == p {print $1}' /proc/[0-9]*/stat 2>/dev/null)
	for k in $kids; do
		want "$(stat -c %U "/proc/$k")" alice
		n=$((n + 1))
	done
	[ "$n" -ge 1 ] || { echo "no warm process under alice's executor (pid $pid)"; return 1; }
	echo "alice's executor (pid $pid) keeps $n warm agent process(es), as alice"
}
check "a follow-up prompt on a warm session as alice runs on the kept Claude Code process, visibly faster (times printed)" warm_followup

# An edit of /etc/agor/agents.yaml reaches the next prompt without an
# executor restart: the warm agent of the session, started with the old
# settings, is restarted with the new ones. The edit is a variable of the
# agent's environment, which its command writes down: under the packaged
# gateway the agent's model URL is the relay's whatever agents.yaml says,
# so a changed URL (this check's edit before the gateway was on) would
# show nothing.
agents_reload() {
	setup_agents
	start_model -bash 'echo "${SUITE_MARK:-unset}" > mark.txt' -text 'Wrote it.' -tools 2
	local s pid
	rm -f /home/alice/p/mark.txt
	timed_prompt 'remember the word ibis-5' >/dev/null
	grep '"status":"completed"' /tmp/timed.out >/dev/null || { tail -n 3 /tmp/timed.out; return 1; }
	want "$(cat /home/alice/p/mark.txt 2>/dev/null)" unset
	s=$(grep -o '"session_id":"[0-9a-f]*"' /tmp/timed.out | head -n 1 | cut -d'"' -f4)
	pid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	sed -i 's#^    CLAUDE_CODE_MAX_RETRIES: "0"$#&\n    SUITE_MARK: second#' /etc/agor/agents.yaml
	grep -q 'SUITE_MARK: second' /etc/agor/agents.yaml
	timed_prompt --session "$s" 'and now?' >/dev/null
	sed -i '/SUITE_MARK: second/d' /etc/agor/agents.yaml
	grep '"status":"completed"' /tmp/timed.out >/dev/null || { tail -n 3 /tmp/timed.out; return 1; }
	want "$(cat /home/alice/p/mark.txt 2>/dev/null)" second
	if grep '"warm":true' /tmp/timed.out >/dev/null; then echo "the warm agent ran with the old settings"; return 1; fi
	want "$(systemctl show -p MainPID --value agor-executor@alice.service)" "$pid"
	journalctl -u agor-executor@alice.service -o cat --no-pager | grep 'agent settings read again' | tail -n 1
	echo "after agents.yaml gave the agent another variable: the same executor (pid $pid) ran the session's follow-up with it, its warm agent restarted"
}
check "an edit of agents.yaml reaches alice's next prompt in the running executor (same pid), restarting her warm agent" agents_reload

# last_status: the status of alice's newest task.
last_status() {
	local s
	s=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	as alice agorctl tasks "$s" --json | grep -o '"status":"[a-z]*"' | tail -n 1 | cut -d'"' -f4
}
# A model that takes the connection and never answers: agorctl prompt says
# it waits for the model; killed, its task is stopped by the daemon once
# the grace period passes with nobody following it. The silent model is
# the gateway's Anthropic upstream (config.d/50-prompt.yaml): behind the
# packaged gateway, that is where the agent's requests go.
prompt_unreachable() {
	setup_agents
	python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18082)); s.listen(16); held = []
while True: held.append(s.accept()[0])' &
	local silent=$! client task t0 status=
	reconfigure 50-prompt 'gateway: {upstreams: {anthropic: "http://127.0.0.1:18082"}}'
	# setpriv execs agorctl: $! is agorctl itself (as's function would be a subshell)
	setpriv --reuid=alice --regid=alice --init-groups agorctl prompt alice 'anyone there?' --cwd p >/tmp/unreach.out 2>/tmp/unreach.err &
	client=$!
	for _ in $(seq 300); do grep -q 'waiting for the model' /tmp/unreach.err && break; sleep 0.1; done
	grep 'waiting for the model' /tmp/unreach.err || { echo "no word after 30 s:"; cat /tmp/unreach.err; kill -9 "$client" "$silent"; reconfigure 50-prompt; return 1; }
	task=$(sed -n 's/.*(task \([0-9a-f]*\);.*/\1/p' /tmp/unreach.err | head -n 1)
	want "$(last_status)" running
	kill -9 "$client"
	t0=$(date +%s)
	for _ in $(seq 120); do status=$(last_status); [ "$status" = running ] || break; sleep 0.5; done
	kill "$silent"
	# The upstream back only now: a restart meanwhile would end the
	# gateway's held request, and with it the task, before the grace period.
	reconfigure 50-prompt
	want "$status" cancelled
	echo "agorctl prompt killed: the daemon stopped task $task $(( $(date +%s) - t0 )) s later (grace 30 s, nobody following)"
	journalctl -u agor-daemon.service -o cat --no-pager | grep "task $task stopped: its client went away"
}
check "a prompt on a model that never answers says so on stderr (no reply for 10s); its killed client leaves a task the daemon stops after the grace period" prompt_unreachable

# agents.warm_per_host: 1 holds the host to one warm agent whoever's it is:
# bob's prompt leaves his agent warm, so the daemon asks alice's executor
# for hers back (the least recently used on the host); her next prompt in
# that session runs cold, resuming it.
warm_host_cap() {
	local t0 s out n
	systemctl stop agor-executor@bob.socket agor-executor@bob.service # agents.yaml afresh
	workspace bob p
	reconfigure 50-prompt 'agents: {warm_per_host: 1}'
	trap 'reconfigure 50-prompt >/dev/null 2>&1' EXIT # the base again however the check ends

	start_model -bash 'true' -text 'Ran it.' -plain 4
	t0=$(date +%s)
	timed_prompt 'remember the word heron-3' >/dev/null
	s=$(grep -o '"session_id":"[0-9a-f]*"' /tmp/timed.out | head -n 1 | cut -d'"' -f4)
	timed_prompt --session "$s" 'still there?' >/dev/null
	grep '"warm":true' /tmp/timed.out >/dev/null || { echo "alice's follow-up did not run warm"; tail -n 2 /tmp/timed.out; return 1; }
	out=$(as bob agorctl prompt bob --json --mode bypassPermissions --cwd p 'hello from bob' 2>&1)
	echo "$out" | grep '"status":"completed"' >/dev/null || { echo "$out" | tail -n 3; return 1; }
	for _ in $(seq 100); do
		n=$(journalctl --no-pager -o cat -u agor-daemon.service --since "@$t0" | grep -c 'warm agent released: host cap' || true)
		[ "$n" -ge 1 ] && break
		sleep 0.1
	done
	journalctl --no-pager -o json -u agor-daemon.service --since "@$t0" | grep 'warm agent released: host cap' |
		grep -o '"AGOR_USER":"[^"]*"\|"AGOR_SESSION_ID":"[^"]*"\|"AGOR_WARM_PER_HOST":"[^"]*"' | tr '\n' ' '
	echo
	journalctl --no-pager -o json -u agor-daemon.service --since "@$t0" | grep 'warm agent released: host cap' | grep "\"AGOR_SESSION_ID\":\"$s\"" >/dev/null ||
		{ echo "no release of alice's warm agent ($s) in the daemon's journal"; return 1; }
	out=$(journalctl --no-pager -o cat -u agor-executor@alice.service --since "@$t0" MESSAGE='warm agent stopped' AGOR_REASON='host cap')
	[ -n "$out" ] || { echo "alice's executor logged no warm agent stopped for the host cap"; return 1; }
	echo "alice's executor: $(echo "$out" | wc -l) x '$(echo "$out" | tail -n 1)', AGOR_REASON=host cap"
	local t
	t=$(timed_prompt --session "$s" 'which word did I give you?')
	grep '"status":"completed"' /tmp/timed.out >/dev/null
	if grep '"warm":true' /tmp/timed.out >/dev/null; then echo "alice's prompt ran warm after her agent was released"; return 1; fi
	echo "alice's session $s after the release: cold, resumed, first event ${t% *} ms"
	reconfigure 50-prompt
}
check "agents.warm_per_host: 1 — bob's warm agent makes the daemon release alice's (least recently used on the host), logged on both ends; her next prompt runs cold, resuming the session" warm_host_cap
