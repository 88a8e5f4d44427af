# The suite's helpers, sourced by checks.sh inside the container: check runs
# one named check, as/ping_as/want are what the concern files share.
T=/opt/tests
pass=0
fail=0
skipped=0

# skip NAME REASON: a check that cannot run here, said so (never a pass).
skip() {
	[ -z "${suite_once:-}" ] || return 0
	echo "SKIP $1: $2"
	skipped=$((skipped + 1))
}

# check NAME FUNC...: runs FUNC with errexit in force (not inside an if,
# where bash would ignore it), so the first failing step fails the check.
# Each check's seconds go to checks.tsv, whose slowest rows the harness prints.
check() {
	local name=$1 out rc t0
	shift
	# A concern of another release (checks.sh): its helpers, not its checks.
	[ -z "${suite_once:-}" ] || return 0
	t0=$(date +%s.%N)
	out=$(set -e; "$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS $name"
		pass=$((pass + 1))
	else
		echo "FAIL $name"
		fail=$((fail + 1))
	fi
	printf '%s\t%s\t%s\t%s\n' "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" \
		"$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "${concern:-?}" "$name" >>/var/log/agor-suite/checks.tsv
	[ -z "$out" ] || echo "$out" | sed 's/^/     /'
}

# whole_here: whether a concern that runs on both releases runs whole
# here. Debian 12 runs each whole; Debian 13 runs the part of it that
# depends on what the release ships (docs/testing.md, per concern),
# unless the harness was asked for every part (AGOR_SUITE_WHOLE=1).
whole_here() { [ "${release:-}" = bookworm ] || [ -e "$T/whole" ]; }

# whole_check NAME FUNC...: check, where the concern runs whole
# (whole_here); on the other release the log says where it ran.
whole_check() {
	if whole_here; then
		check "$@"
	elif [ -z "${suite_once:-}" ]; then
		echo "ONCE $1: Debian 12's part of the concern (docs/testing.md says why)"
	fi
}

# rounds FULL BRIEF: how many rounds a benchmark inside the suite takes.
# Its figures are printed, never asserted; CI takes them briefly, and
# `make bench` (AGOR_SUITE_BENCH=full) in full.
rounds() { if [ -e "$T/bench-full" ]; then echo "$1"; else echo "$2"; fi; }

as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }
ping_as() { as "$1" agorctl executors ping --socket "/run/agor/executors/$2.sock" --timeout 10s; }
want() { [ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }; }
# no_units PATTERN...: no unit matching is loaded (none was started).
no_units() { test -z "$(systemctl list-units --all --plain --no-legend "$@")" || { systemctl list-units --all --no-legend "$@"; return 1; }; }
# bearer GET PATH TOKEN: one request to the daemon's TCP API (bash's
# /dev/tcp: the container has no HTTP client); prints status line and body.
bearer() {
	exec 3<>/dev/tcp/127.0.0.1/8123
	printf 'GET %s HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$1" "$2" >&3
	cat <&3
	exec 3<&-
}

# The configuration the concerns start from (after the install concern):
# the packaged /etc/agor/config.yaml as shipped, untouched, and one drop-in,
# config.d/10-suite.yaml, with only what a test host must differ in. A
# concern's own changes go in a drop-in of its own (set_dropin), dropped at
# its end (drop_dropin), so that each check runs what operators run plus
# what it says. docs/testing.md, "The base configuration".
confd=/etc/agor/config.d
# suite_dropin: config.d/10-suite.yaml, each key with why a test host needs it.
suite_dropin() {
	cat <<'YAML'
# The suite's test host: what it must differ in from a packaged one.
execution:
  # carol, outside agorusers, is the suite's refused person (daemon.sh,
  # identity.sh); the packaged file allows anyone with uid >= 1000.
  allowed_groups: [agorusers]
  # headroom over the packaged 100: the concerns bring up 20 users at once
  # (daemon.sh) and leave many executors up; no check is about the cap.
  max_executors: 200
gateway:
  # the container has no network: the stand-in models (start_model,
  # modes_models) answer for each API family the packaged gateway speaks.
  upstreams:
    anthropic: http://127.0.0.1:18080
    openai: http://127.0.0.1:18081
    gemini: http://127.0.0.1:18082
  # the model the gateway checks ask for by name; the packaged gateway
  # refuses a model it has no price for (the CLIs' defaults are priced).
  prices:
    claude-standin: {input: 10000}
YAML
}

# base_config: the packaged config.yaml (from the .deb, whatever a concern
# did to it) and the suite's drop-in alone in config.d. No restart.
base_config() {
	dpkg-deb --fsys-tarfile "$T/agor_0.1.0-1_amd64.deb" | tar -xO ./etc/agor/config.yaml >/etc/agor/config.yaml.new
	mv /etc/agor/config.yaml.new /etc/agor/config.yaml
	rm -rf "$confd"
	set_dropin 10-suite "$(suite_dropin)"
}
# set_dropin NAME YAML: config.d/NAME.yaml holds YAML (replaced whole, at
# once: the daemon may read it meanwhile). No restart.
set_dropin() {
	mkdir -p "$confd"
	printf '%s\n' "$2" >"$confd/.$1.yaml.new"
	mv "$confd/.$1.yaml.new" "$confd/$1.yaml"
}
# drop_dropin NAME...: those drop-ins gone. No restart.
drop_dropin() { local n; for n in "$@"; do rm -f "$confd/$n.yaml"; done; }
# reconfigure NAME [YAML]: set (or, with no YAML, drop) a drop-in, then
# restart the daemon, which reads its configuration at start.
reconfigure() {
	if [ $# -ge 2 ]; then set_dropin "$1" "$2"; else drop_dropin "$1"; fi
	restart_daemon
}
# workspace USER [DIR]: ~USER/DIR (default work), USER's, made for a
# prompt's --cwd: the packaged sandbox.prompts (workspace) refuses a prompt
# at the home, and confines one elsewhere to its directory.
workspace() { as "$1" install -d "/home/$1/${2:-work}"; }

# tcp_api: the daemon listens on 127.0.0.1:8123 too (bearer tokens).
tcp_api() {
	[ -e "$confd/40-tcp-api.yaml" ] || set_dropin 40-tcp-api 'api: {tcp_address: 127.0.0.1:8123}'
	restart_daemon
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8123) 2>/dev/null && return 0; sleep 0.1; done
	echo "the TCP API did not come up"; return 1
}

# restart_daemon: systemctl restart, clearing the start rate limit first: the
# checks restart the daemon more often than systemd's default burst allows
# (systemd 257 counts each restart; an operator would not restart this often).
restart_daemon() {
	systemctl reset-failed agor-daemon.service 2>/dev/null || true
	systemctl restart agor-daemon.service
}
# start_model DEMOMODEL-FLAGS...: (re)starts the stand-in model API on
# 127.0.0.1:18080 (the container has none); its URL lands in /tmp/model.url.
start_model() {
	local old
	old=$(cat /tmp/model.pid 2>/dev/null || true)
	if [ -n "$old" ]; then
		kill "$old" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
	fi
	rm -f /tmp/model.url
	"$T/demomodel" -listen 127.0.0.1:18080 "$@" >/tmp/model.url 2>/tmp/model.log &
	echo $! >/tmp/model.pid
	for _ in $(seq 50); do [ -s /tmp/model.url ] && return 0; sleep 0.1; done
	echo "demomodel did not start"; cat /tmp/model.log; return 1
}
# standin_requests [PORT]: the stand-in model's own record (on PORT, 18080 by
# default), one "KEY IN OUT CR CW" line per request it answered.
standin_requests() {
	python3 -c 'import json, sys, urllib.request
for r in json.load(urllib.request.urlopen("http://127.0.0.1:%s/stand-in/requests" % sys.argv[1])) or []:
    print(r["key"], r["input"], r["output"], r["cache_read"], r["cache_write"])' "${1:-18080}"
}

# pane, wait_pane REGEX: the tmux session agorterm's screen, and waiting for a line of it.
pane() { tmux capture-pane -p -t agorterm; }
wait_pane() {
	local _
	for _ in $(seq 150); do pane | grep -E -- "$1" >/dev/null && return 0; sleep 0.1; done
	echo "pane never showed /$1/:"; pane; return 1
}
# screen_has WORDS: the pane shows WORDS, white space ignored (a UI moves
# the cursor rather than write spaces).
screen_has() { pane | tr -d ' \n' | grep -F -- "$(printf %s "$1" | tr -d ' ')" >/dev/null; }

# wait_screen WORDS [SECONDS]: waits for WORDS on the pane (60 s).
wait_screen() {
	local _
	for _ in $(seq $((${2:-60} * 5))); do screen_has "$1" && return 0; sleep 0.2; done
	echo "the screen never showed '$1'; it shows:"; pane | grep -v '^ *$' | tail -n 25; return 1
}

# type_in TEXT: TEXT typed, then, once the UI shows it, Enter (typed with
# the text, a UI may take the burst as a paste and Enter as its new line).
type_in() {
	tmux send-keys -t agorterm -l "$1"
	wait_screen "${1:0:40}" # its start: a UI may wrap a long line in a frame
	tmux send-keys -t agorterm Enter
}

# in_tmux CMD: runs CMD (an agorctl terminal) in a fresh 100x30 tmux
# session, which prints agorctl's exit status when it ends.
in_tmux() {
	# The previous session's server exits after kill-server returns: a
	# new session made meanwhile can reach the dying one ("server exited
	# unexpectedly"). Wait for its socket to go, and try again if it did.
	tmux kill-server 2>/dev/null || true
	local _
	for _ in $(seq 50); do [ -S "/tmp/tmux-$(id -u)/default" ] || break; sleep 0.1; done
	for _ in 1 2 3; do
		TERM=xterm-256color tmux -f /dev/null new-session -d -s agorterm -x 100 -y 30 \
			"$1; echo agorctl-exit=\$?; sleep 600" && break
		sleep 0.2
	done
	tmux set-option -t agorterm status off
}

# port_free PORT: waits (10 s at most) until no TCP socket here is bound
# to 127.0.0.1:PORT (TIME_WAIT aside: it does not block a listener with
# SO_REUSEADDR): a stand-in's old connections may
# outlive it for a moment; says what still holds it.
port_free() {
	local _
	for _ in $(seq 100); do [ -z "$(ss -tanH exclude time-wait "sport = :$1" 2>/dev/null)" ] && return 0; sleep 0.1; done
	echo "port $1 still bound after 10 s:"; ss -tanp "sport = :$1" 2>&1
}

# The four real CLIs against their stand-ins (modes.sh, escapes.sh): the
# stand-ins run $modes_cmd as their tool call.
# modes_models starts the three other stand-ins beside start_model's
# Anthropic one (18080): Responses for codex, Gemini, chat for opencode.
modes_models() {
	local api port pid
	for api in openai-responses:18081 gemini:18082 openai-chat:18083; do
		port=${api#*:}
		api=${api%%:*}
		pkill -f "demomodel -api $api" 2>/dev/null || true
		for _ in $(seq 50); do pgrep -f "demomodel -api $api" >/dev/null || break; sleep 0.1; done # its port free again
		! pgrep -af "demomodel -api $api" || echo "the $api stand-in outlived SIGTERM for 5 s"
		port_free "$port"
		"$T/demomodel" -api "$api" -listen "127.0.0.1:$port" -bash "$modes_cmd" -text 'done.' >"/tmp/model-$api.url" 2>"/tmp/model-$api.log" &
	done
	for _ in $(seq 100); do [ -s /tmp/model-openai-chat.url ] && [ -s /tmp/model-gemini.url ] && [ -s /tmp/model-openai-responses.url ] && return 0; sleep 0.1; done
	echo "a stand-in model did not start"; cat /tmp/model-*.log
	# Who holds their ports (seen twice: 18083 taken while no one listened
	# on it; cause not found yet): every socket on them, in every state.
	ss -tanp 'sport >= :18080 and sport <= :18083' 2>&1
	for pid in $(ss -ltnpH 'sport >= :18080 and sport <= :18083' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
		echo "pid $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>&1 | cut -c1-200)"
	done
	return 1
}

# stop_executor USER: USER's executor socket and service stopped. The
# daemon may be starting them at that moment (a restart's reattach, a
# pre-warm at an executor's start): systemd then cancels one of the two
# jobs ("Job for agor-executor@alice.socket canceled", seen once under
# load), and the stop is asked again until both are inactive.
stop_executor() {
	local _
	for _ in 1 2 3 4 5; do
		# (is-active succeeds when any of the units named is active.)
		systemctl stop "agor-executor@$1.socket" "agor-executor@$1.service" 2>/dev/null &&
			! systemctl is-active --quiet "agor-executor@$1.socket" "agor-executor@$1.service" && return 0
		sleep 0.2
	done
	systemctl stop "agor-executor@$1.socket" "agor-executor@$1.service"
}

# modes_agents [PORT]: agents.yaml for the four CLIs, each pointed at its
# stand-in (18080-18083), or every one at PORT (the gateway's checks: an
# address nothing serves), with the daemon-wide keys.
modes_agents() {
	local a=${1:-18080} c=${1:-18081} g=${1:-18082} o=${1:-18083}
	# gemini is a Node.js program: the host's node, bound at /opt/node.
	ln -sf /opt/node/node /usr/local/bin/node
	cat >/etc/agor/agents.yaml <<YAML
claude-code:
  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  env:
    ANTHROPIC_BASE_URL: http://127.0.0.1:$a
    CLAUDE_CODE_MAX_RETRIES: "0"
codex:
  binary: /opt/agents/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
  env:
    AGOR_CODEX_BASE_URL: http://127.0.0.1:$c/v1
gemini:
  binary: /opt/agents/gemini/node_modules/.bin/gemini
  env:
    GOOGLE_GEMINI_BASE_URL: http://127.0.0.1:$g
opencode:
  binary: /opt/agents/opencode/node_modules/opencode-ai/bin/opencode.exe
  env:
    AGOR_OPENCODE_BASE_URL: http://127.0.0.1:$o/v1
YAML
	printf 'sk-ant-suite-0123456789\n' | agorctl creds set ANTHROPIC_API_KEY --daemon >/dev/null
	printf 'sk-oai-suite-0123456789\n' | agorctl creds set OPENAI_API_KEY --daemon >/dev/null
	printf 'gm-suite-0123456789\n' | agorctl creds set GEMINI_API_KEY --daemon >/dev/null
	stop_executor alice # read agents.yaml afresh
}

