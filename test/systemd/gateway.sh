# The model gateway under the shipped units: alice's real Claude Code
# reaches the stand-in through her executor's relay and the daemon, which
# puts the daemon's key on; the key is in none of her processes or files,
# and her agent holds only a placeholder; the ledger equals the stand-in's
# count; bob's connections to her relay are refused, and what her running
# task's agent holds is no use to him, each refusal audited; a budget
# refuses her, not bob, and raising it lets her go on. Sourced by checks.sh after prompt.sh (uses
# start_model); the configuration is put back at the end. Alice's and
# bob's prompts run in ~/gw (the packaged sandbox.prompts: workspace).

# gateway_config EXTRA [UPSTREAMS]: config.d/50-gateway.yaml over the base
# (where the packaged gateway is on already): the gateway on, its
# upstreams UPSTREAMS (by default Anthropic's the stand-in, as in the
# base; the others stay the base's), the stand-in's model priced, and
# EXTRA (gateway keys, indented, or other sections) after them.
gateway_config() {
	set_dropin 50-gateway "$(printf 'gateway:\n  enabled: true\n  upstreams: {%s}\n  prices: {claude-standin: {input: 10000}}\n%s\n' \
		"${2:-anthropic: \"http://127.0.0.1:18080\"}" "$1")"
}

# gateway_agents: the four CLIs pointed at an address nothing serves
# (only the gateway's relay gets them anywhere).
gateway_agents() { modes_agents 9; }

# ledger_since T0: alice's ledger since T0 (seconds, with nanoseconds:
# this machine's clock is coarse beside the work, and a whole second
# would take in the check before) summed, "IN OUT CR CW".
ledger_since() {
	agorctl usage --user alice --since "$(date -d "@$1" +%Y-%m-%dT%H:%M:%S.%N%:z)" --json | python3 -c 'import json, sys
rows = json.load(sys.stdin)["rows"]
print(sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows), sum(r["cache_read_tokens"] for r in rows), sum(r["cache_write_tokens"] for r in rows))'
}

# gateway_post AS TOKEN [CREDENTIAL]: a Messages request straight to the
# gateway's socket as user AS with TOKEN for a key, and CREDENTIAL on the
# door line a relay would write first; prints the status line.
gateway_post() {
	as "$1" python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("/run/agor/gateway.sock")
b = b"{\"model\":\"claude-x\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
door = b"AGOR-GATEWAY-TASK " + sys.argv[2].encode() + b"\n" if sys.argv[2] else b""
s.sendall(door + b"POST /v1/messages HTTP/1.0\r\nHost: x\r\nx-api-key: " + sys.argv[1].encode() + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b)
print(s.makefile("rb").readline().decode().strip())' "$2" "${3:-}"
}

gateway_prompt() {
	local t0 out tok n p
	cp /etc/agor/agents.yaml /etc/agor/agents.yaml.gw-orig # put back by gateway_off
	gateway_config ""
	gateway_agents
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	start_model -bash 'env > agent-env.txt; id -un' -text 'done'
	workspace alice gw
	workspace bob gw
	rm -f /home/alice/gw/agent-env.txt
	t0=$(date +%s.%N)
	out=$(as alice agorctl prompt alice 'through the gateway' --mode bypassPermissions --model claude-standin --cwd gw 2>&1) || { echo "$out"; return 1; }
	echo "$out" | grep '^completed' >/dev/null || { echo "$out"; return 1; }
	tok=$(sed -n 's/^ANTHROPIC_API_KEY=//p' /home/alice/gw/agent-env.txt)
	want "$tok" agor-gateway # the placeholder: the agent holds no credential
	grep '^ANTHROPIC_BASE_URL=http://127.0.0.1:' /home/alice/gw/agent-env.txt
	# The stand-in saw the daemon's key on every request, and nothing else.
	want "$(standin_requests | cut -d' ' -f1 | sort -u)" sk-ant-suite-0123456789
	# The key is in none of alice's processes' environments, nor her files.
	for p in $(pgrep -u alice); do
		if grep -qa sk-ant-suite "/proc/$p/environ" 2>/dev/null; then echo "pid $p of alice holds the key"; return 1; fi
	done
	if grep -rl sk-ant-suite /home/alice 2>/dev/null; then echo "alice's files hold the key"; return 1; fi
	# The ledger equals the stand-in's own count, request for request.
	n=$(standin_requests | wc -l)
	want "$(standin_requests | awk '{i+=$2; o+=$3; r+=$4; w+=$5} END {print i, o, r, w}')" "$(ledger_since "$t0")"
	echo "$n requests through the gateway with the daemon's key; the agent held the placeholder $tok; the key in none of alice's processes or files; the ledger equals the stand-in's tokens"
}
check "gateway: alice's Claude Code reaches its model through the daemon's gateway; the stand-in sees the daemon's key, alice's processes and files never hold it, the ledger equals the stand-in's count" gateway_prompt

# prewarm_as USER BODY: POST /v1/executors/USER/prewarm as USER; prints the reply.
prewarm_as() {
	as "$1" curl -s --unix-socket /run/agor/daemon.sock -X POST -H 'Content-Type: application/json' \
		-d "$2" "http://agor/v1/executors/$1/prewarm"
}

# prewarm_prompt USER ARGS...: a prompt as USER with the pre-warm's
# options (and ARGS); prints "FIRST_MS PREWARMED" and leaves the stream in
# /tmp/timed.out.
prewarm_prompt() {
	local u=$1 t0 first="" line now
	shift
	t0=$(date +%s%N)
	: >/tmp/timed.out
	while IFS= read -r line; do
		printf '%s\n' "$line" >>/tmp/timed.out
		if [ -z "$first" ] && [[ $line == *'"text_delta"'* ]]; then
			now=$(date +%s%N)
			first=$(((now - t0) / 1000000))
		fi
	done < <(as "$u" agorctl prompt "$u" --json --mode bypassPermissions --model claude-standin "$@" 2>&1)
	grep '"status":"completed"' /tmp/timed.out >/dev/null || { tail -n 3 /tmp/timed.out >&2; return 1; }
	if grep '"prewarmed":true' /tmp/timed.out >/dev/null; then echo "${first:-none} true"; else echo "${first:-none} false"; fi
}

# Pre-warming under the shipped units (the gateway on): alice's pre-warmed
# Claude Code sends the model nothing before its prompt; bob's prompt of
# the same options, and alice's in another cwd or at another sandbox
# level, do not run on it; alice's matching prompt does, faster.
gateway_prewarm() {
	start_model -tools 0 -text 'Noted.' -plain 20
	systemctl stop agor-executor@alice.socket agor-executor@alice.service agor-executor@bob.socket agor-executor@bob.service
	as alice mkdir -p /home/alice/elsewhere
	local out bob other level cold pre
	out=$(prewarm_as alice '{"agentic_tool":"claude-code","cwd":".","permission_mode":"bypassPermissions","model":"claude-standin","sandbox":"off"}')
	echo "$out" | grep '"status":"started"' >/dev/null || { echo "pre-warm: $out"; return 1; }
	sleep 2 # the agent's start-up is over: still nothing may reach the model
	want "$(standin_requests | wc -l)" 0
	bob=$(prewarm_prompt bob --sandbox off 'hello from bob') || return 1
	other=$(prewarm_prompt alice --sandbox off --cwd elsewhere 'hello from elsewhere') || return 1
	level=$(prewarm_prompt alice --sandbox read-only 'hello, read-only') || return 1
	cold=${other% *}
	for r in "$bob" "$other" "$level"; do
		[ "${r#* }" = false ] || { echo "a prompt of other options ran on alice's pre-warm: $r"; return 1; }
	done
	pre=$(prewarm_prompt alice --sandbox off 'hello, pre-warmed') || return 1
	[ "${pre#* }" = true ] || { echo "alice's matching prompt did not run pre-warmed"; tail -n 2 /tmp/timed.out; return 1; }
	echo "first answer event: pre-warmed ${pre% *} ms; cold ${cold} ms (another cwd), ${level% *} ms (read-only), bob ${bob% *} ms"
	journalctl --no-pager -u agor-executor@alice.service | grep 'agent pre-warmed' | tail -n 1
}
whole_check "gateway: alice's pre-warmed Claude Code waits silent for her prompt; bob's, another cwd's and another sandbox level's prompts do not run on it; her matching prompt does (times printed)" gateway_prewarm

# gateway_each: codex, gemini and opencode through the gateway, each to
# its stand-in (the daemon restarted with that upstream: codex's and
# opencode's are both "openai"), each CLI's own URL dead: the stand-in
# sees the daemon's key only, the agent's environment holds the token
# and not the key, the ledger equals the stand-in's count.
gateway_each() {
	local spec tool up port t0 out prompt key bad=0
	modes_cmd='env > agent-env.txt' modes_models
	gateway_agents
	for spec in codex:openai:18081:sk-oai-suite-0123456789 gemini:gemini:18082:gm-suite-0123456789 opencode:openai:18083:sk-oai-suite-0123456789; do
		IFS=: read -r tool up port key <<<"$spec"
		gateway_config "" "$up: \"http://127.0.0.1:$port\""
		restart_daemon
		systemctl stop agor-executor@alice.socket agor-executor@alice.service
		as alice install -d /home/alice/gw
		rm -f /home/alice/gw/agent-env.txt
		prompt="run it. env > agent-env.txt"
		case $tool in gemini | opencode) prompt="run the shell command: env > agent-env.txt" ;; esac
		t0=$(date +%s.%N)
		out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --cwd gw --mode bypassPermissions 2>&1 </dev/null) || { echo "$tool: $out"; bad=1; continue; }
		if ! grep -q "_API_KEY=agor-gateway$" /home/alice/gw/agent-env.txt 2>/dev/null || grep -q "$key" /home/alice/gw/agent-env.txt; then
			echo "$tool: its environment: $(grep -E 'API_KEY|BASE_URL' /home/alice/gw/agent-env.txt 2>&1 | cut -c1-60 | tr '\n' ' ')"; bad=1; continue
		fi
		if [ "$(standin_requests "$port" | cut -d' ' -f1 | sort -u)" != "$key" ]; then
			echo "$tool: the stand-in saw keys $(standin_requests "$port" | cut -d' ' -f1 | cut -c1-12 | sort -u | tr '\n' ' ')"; bad=1; continue
		fi
		if ! want "$(standin_requests "$port" | awk '{i+=$2; o+=$3; r+=$4; w+=$5} END {print i, o, r, w}')" "$(ledger_since "$t0")"; then
			echo "$tool: the stand-in's requests:"; standin_requests "$port" | cut -c1-12,20-
			echo "the ledger since $t0:"; agorctl usage --user alice --since "$(date -d "@$t0" +%Y-%m-%dT%H:%M:%S.%N%:z)"
			echo "its last rows (at, task, session, model, in, status, error) and their tasks:"
			python3 -c 'import sqlite3
db = sqlite3.connect("file:/var/lib/agor/agor.db?mode=ro", uri=True)
for r in db.execute("SELECT l.at / 1000000, l.task_id, l.session_id, l.model, l.input_tokens, l.status, l.error, t.status, t.ended_at / 1000000 FROM ledger l LEFT JOIN tasks t ON t.id = l.task_id ORDER BY l.id DESC LIMIT 10"):
    print(*r)'
			journalctl --no-pager -o cat -u agor-daemon.service --since "-2min" | grep -i gateway | tail -n 10
			bad=1
			continue
		fi
		echo "$tool: $(standin_requests "$port" | wc -l) requests through the gateway with the daemon's key, the agent held the placeholder; ledger = stand-in: $(ledger_since "$t0")"
		modes_cmd='env > agent-env.txt' modes_models # a fresh count for the next
	done
	return $bad
}
check "gateway: codex, gemini and opencode reach their models through it with the daemon's key, never in the agent; the ledger equals each stand-in's count" gateway_each

# gateway_forged: straight to the gateway's socket, with no relay's door
# line: what alice's agent holds (the placeholder), a token of the old
# per-session kind, the key itself, each from bob and from alice; a
# made-up credential on a door line. All refused, and audited.
gateway_forged() {
	local u
	for u in bob alice; do
		want "$(gateway_post "$u" agor-gateway)" "HTTP/1.0 401 Unauthorized"
		want "$(gateway_post "$u" "agor-gw1.x.$(id -u alice).forged")" "HTTP/1.0 401 Unauthorized"
		want "$(gateway_post "$u" sk-ant-suite-0123456789)" "HTTP/1.0 401 Unauthorized"
	done
	want "$(gateway_post alice agor-gateway "agor-gw2.t.s.$(id -u alice).forged")" "HTTP/1.0 401 Unauthorized"
	sleep 2 # the audit trail's aggregation window
	journalctl --no-pager -o verbose -u agor-daemon.service AGOR_AUDIT_ACTION=gateway_refused --since "-1min" >/tmp/gw-refused.txt
	grep -F "AGOR_REASON=no credential: the request did not come through an executor's relay (from uid $(id -u bob))" /tmp/gw-refused.txt >/dev/null || {
		echo "no gateway_refused record of bob's"; grep AGOR_REASON /tmp/gw-refused.txt; return 1; }
	grep -F "AGOR_REASON=not a credential this daemon signed (from uid $(id -u alice))" /tmp/gw-refused.txt >/dev/null || {
		echo "no gateway_refused record of the forged credential"; grep AGOR_REASON /tmp/gw-refused.txt; return 1; }
	echo "refused: the placeholder, an old-kind token and the key from bob and alice with no door line; a forged credential on one; audited:"
	grep AGOR_REASON /tmp/gw-refused.txt | sort | uniq -c
}
check "gateway: straight to its socket, what an agent holds, an old token, the key, a forged credential are refused and audited" gateway_forged

# door_hold USER ADDR N: USER opens N idle connections to ADDR
# (127.0.0.1:PORT), then sends a Messages request on one more with the
# placeholder; prints how many of the N the relay had closed within 2 s
# and the status line the request got ("none": the connection closed
# without one).
door_hold() {
	as "$1" python3 -c 'import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
conns = [socket.create_connection((host, int(port))) for _ in range(int(sys.argv[2]))]
closed, end = 0, time.time() + 2
for c in conns:
    c.settimeout(max(0.01, end - time.time()))
    try:
        while c.recv(4096):
            pass
        closed += 1
    except socket.timeout:
        pass
    except OSError:
        closed += 1
s = socket.create_connection((host, int(port)))
b = b"{\"model\":\"claude-standin\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
try:
    s.sendall(b"POST /v1/messages HTTP/1.0\r\nHost: x\r\nx-api-key: agor-gateway\r\nContent-Type: application/json\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b)
    line = s.makefile("rb").readline().decode().strip() or "none"
except OSError:
    line = "none"
print(closed, line)' "$2" "$3"
}

# gateway_door: while alice's Claude Code runs a turn (its Bash tool waits
# for a file), bob opens 200 idle connections to her relay (its address
# and her agent's key read from her agent's environment): each is closed
# at once, and his request with her agent's key on one more is refused;
# her agent's next requests are still served (the prompt completes). Her
# executor's journal and the daemon's audit trail name bob's uid.
gateway_door() {
	local out addr rc=0 t0
	gateway_agents
	gateway_config "" # Anthropic's upstream the stand-in again (gateway_each changed it)
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	start_model -bash 'env > door-env.txt; touch door-ready; while [ ! -e door-go ]; do sleep 0.2; done' -text 'done'
	rm -f /home/alice/gw/door-env.txt /home/alice/gw/door-ready /home/alice/gw/door-go
	t0=$(date +%s)
	as alice agorctl prompt alice 'the door' --mode bypassPermissions --model claude-standin --cwd gw >/tmp/door.out 2>&1 &
	for _ in $(seq 300); do [ -e /home/alice/gw/door-ready ] && break; sleep 0.2; done
	[ -e /home/alice/gw/door-ready ] || { echo "alice's agent never ran its tool"; cat /tmp/door.out; return 1; }
	want "$(sed -n 's/^ANTHROPIC_API_KEY=//p' /home/alice/gw/door-env.txt)" agor-gateway || rc=1
	addr=$(sed -n 's|^ANTHROPIC_BASE_URL=http://||p' /home/alice/gw/door-env.txt)
	out=$(door_hold bob "$addr" 200)
	case $out in "200 HTTP/1.1 403 Forbidden" | "200 none") ;; *) echo "bob at alice's relay: $out"; rc=1 ;; esac
	as alice touch /home/alice/gw/door-go
	wait $! || { echo "alice's prompt beside bob's connections:"; cat /tmp/door.out; rc=1; }
	grep '^completed' /tmp/door.out >/dev/null || rc=1
	sleep 2 # the executor sums refusals a second, the audit trail aggregates a second
	journalctl --no-pager -o cat -u agor-executor@alice.service --since "@$t0" AGOR_PEER_UID="$(id -u bob)" >/tmp/door-exec.txt
	grep -F "gateway relay: connections refused" /tmp/door-exec.txt >/dev/null || { echo "alice's executor's journal names no refusal of bob's"; rc=1; }
	journalctl --no-pager -o verbose -u agor-daemon.service AGOR_AUDIT_ACTION=gateway_refused --since "@$t0" >/tmp/door-audit.txt
	grep -F "AGOR_REASON=at alice's executor's relay: another_account (from uid $(id -u bob))" /tmp/door-audit.txt >/dev/null || {
		echo "no gateway_refused record of bob's"; grep AGOR_REASON /tmp/door-audit.txt; rc=1; }
	grep -E 'AGOR_REASON=|AGOR_COUNT=' /tmp/door-audit.txt | paste -sd' ' 
	[ "$rc" = 0 ] && echo "bob's 200 connections to alice's relay closed at once and his request with her agent's key refused ($out); her prompt completed"
	return $rc
}
check "gateway: bob's connections to alice's relay are refused and what her running task's agent holds is no use to him (audited); her agent is still served" gateway_door

# gw_small_reserve: what each request holds against alice's budget while
# it runs, one input token: 0.01 at claude-standin's price (which prices
# no output). At the default reserve (the body's bytes over 2 as input
# tokens) a request holds 5.00 a kB of its body at that price, Claude
# Code's (tens of kB) hundreds of dollars: her first request would be
# refused, not her second, and the raise to 100 would not let her go on.
# With this, what refuses her is what she spent (1.20 a request), as this
# check means; the reservation's own bounds are tested in
# internal/daemon/meter.
gw_small_reserve='  reserve: {max_output: 1, bytes_per_token: 1048576, max_input: 1}'

# gateway_budget: alice's daily budget (what she spent today and 1.00
# more, at 1.20 a request) is reached within her turn: its second request is refused with the
# budget's words, and her next prompt before any agent starts; bob's
# prompt goes through; raising her budget (no restart) lets her go on.
gateway_budget() {
	local out spent
	spent=$(agorctl usage --user alice --period day --json | python3 -c 'import json, sys
print(round(sum(r["cost"] for r in json.load(sys.stdin)["rows"]), 6))')
	# One request (1.20) fits under what she spent today plus 1.00; a second does not.
	gateway_agents
	gateway_config "$gw_small_reserve
  budgets: {users: {alice: {day_cost: $(python3 -c "print($spent + 1)")}}}"
	restart_daemon # the upstream is Anthropic's again
	systemctl stop agor-executor@alice.socket agor-executor@alice.service agor-executor@bob.socket agor-executor@bob.service
	start_model -bash 'true' -text 'done' -tools 3
	if out=$(as alice agorctl prompt alice 'spend' --mode bypassPermissions --model claude-standin --cwd gw 2>&1); then echo "alice's turn past her budget completed: $out"; return 1; fi
	echo "$out" | grep -o 'agor: daily budget of [0-9.]* USD reached, resets [0-9-]*' | head -n 1 | grep . || { echo "$out"; return 1; }
	if out=$(as alice agorctl prompt alice 'again' --mode bypassPermissions --model claude-standin --cwd gw 2>&1); then echo "alice's next prompt ran: $out"; return 1; fi
	echo "$out" | grep budget_reached >/dev/null || { echo "$out"; return 1; }
	out=$(as bob agorctl prompt bob 'mine' --mode bypassPermissions --model claude-standin --cwd gw 2>&1) || { echo "bob: $out"; return 1; }
	echo "$out" | grep '^completed' >/dev/null
	gateway_config "$gw_small_reserve
  budgets: {users: {alice: {day_cost: 100}}}"
	out=$(as alice agorctl prompt alice 'raised' --mode bypassPermissions --model claude-standin --cwd gw 2>&1) || { echo "after the raise: $out"; return 1; }
	journalctl --no-pager -o cat -u agor-daemon.service AGOR_AUDIT_ACTION=budget_reached | tail -n 1
	echo "alice refused mid-turn and before her next prompt; bob completed; alice completed after her budget was raised"
}
whole_check "gateway: a budget refuses alice within her turn and before her next prompt, not bob; raising it lets her go on" gateway_budget

# gateway_page: the Cockpit page's Usage tab, in headless Chromium, as
# alice: her rows of the ledger and her daily cost budget's bar (the
# page is put back for this check and removed again).
gateway_page() {
	local rc=0
	dpkg -i $T/agor-cockpit_0.1.0-1_all.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	systemctl start cockpit.socket
	cockpit_accounts
	groupdel agor-admins # as the other concerns know the host
	mkdir -p "$cockpit_shots"
	ALICE_PW=alice-Cockpit-1 STEPS=usage USAGE_PERIOD=day EXPECT_BUDGET="day cost" \
		timeout 300 /opt/node/node $T/cockpit-browser.mjs "$cockpit_shots" >/tmp/browser-usage.out 2>&1 || rc=$?
	grep -v "console\] verbose" /tmp/browser-usage.out | grep -v "console\]" | head -n 20
	cp /tmp/disallowed-users.orig /etc/cockpit/disallowed-users 2>/dev/null || true
	dpkg -r agor-cockpit >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	[ "$rc" = 0 ]
}
whole_check "gateway: the Cockpit page's Usage tab shows alice her own ledger rows and her daily budget (headless Chromium)" gateway_page

# gateway_network (after the page, which reads the budget gateway_budget
# left): the gateway goes by its person's egress rules. alice
# under mode proxy (her executor in its own network namespace) with the
# stand-in not listed: her agent's requests are refused, saying why, and
# bob (open) goes on; listing the stand-in (no restart) lets her through,
# still from her namespace. Everyone is open again afterwards.
gateway_network() {
	local out rc=0
	gateway_agents
	gateway_config "network: {users: {alice: {mode: proxy, allow: [api.example.test]}}}"
	restart_daemon
	agorctl network apply >/dev/null
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" yes
	start_model -bash 'true' -text 'done'
	if out=$(as alice agorctl prompt alice 'out?' --mode bypassPermissions --model claude-standin --cwd gw 2>&1); then
		echo "alice's prompt completed with the stand-in not listed: $out"; rc=1
	fi
	echo "$out" | grep -o "agor: alice's network rules do not let her model requests reach 127.0.0.1:18080 ([^;]*" | head -n 1 | grep . || { echo "$out"; rc=1; }
	[ "$(standin_requests | wc -l)" = 0 ] || { echo "the stand-in was reached: $(standin_requests)"; rc=1; }
	out=$(as bob agorctl prompt bob 'mine' --mode bypassPermissions --model claude-standin --cwd gw 2>&1) || { echo "bob: $out"; rc=1; }
	gateway_config "network: {users: {alice: {mode: proxy, allow: [api.example.test, \"127.0.0.1:18080\"]}}}"
	start_model -bash 'true' -text 'done' # bob's turn took the script
	out=$(as alice agorctl prompt alice 'listed' --mode bypassPermissions --model claude-standin --cwd gw 2>&1) || { echo "alice, listed: $out"; rc=1; }
	echo "$out" | grep '^completed' >/dev/null || rc=1
	gateway_config ""
	agorctl network apply >/dev/null
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" no || rc=1
	[ "$rc" = 0 ] && echo "alice under proxy: refused while the stand-in was not listed (nothing reached it), bob completed; listed, her prompt completed"
	return $rc
}
check "gateway: alice's model requests go by her egress rules (mode proxy: refused unless her lists allow the upstream); bob's do not" gateway_network

gateway_off() {
	drop_dropin 50-gateway # the base: the packaged gateway, the suite's upstreams
	# The agents as the concerns after this one know them (each CLI at
	# its stand-in, not the dead address the gateway's checks used).
	mv /etc/agor/agents.yaml.gw-orig /etc/agor/agents.yaml
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service agor-executor@bob.socket agor-executor@bob.service
	agorctl doctor | grep ' gateway ' || true
}
check "gateway: the base configuration again (config.d/50-gateway.yaml gone)" gateway_off
