#!/usr/bin/env bash
# The demo behind `make run`: agor-daemon in direct mode (no systemd
# needed) on a private socket with its own state. It starts your executor on
# first use, runs a command there, seals an API key, runs a real Claude Code
# turn through the model gateway (the key stays in the daemon) against a
# stand-in model server on 127.0.0.1 (there is no model API to
# reach from here), opens a terminal, and shows the audit trail. Run as root,
# executors run as the account test/testaccount.sh makes (an executor runs
# neither as root nor as nobody); as anyone else, as you. Everything happens in a temporary directory.
set -euo pipefail
bin=$(cd "${1:-bin}" && pwd) # absolute: the demo runs its commands from $dir
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/agor-demo.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -m 700 "$dir/state"
mkdir -m 777 "$dir/work" "$dir/work/.home"
cp "$bin/agor-executor" "$dir/" && chmod 755 "$dir/agor-executor"
user=$(id -un) min_uid=1000 scope=()
if [ "$(id -u)" = 0 ]; then
	user=$("$top/test/testaccount.sh") min_uid=1 scope=(--daemon)
fi
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

claude=$top/test/.cache/agents/claude-code/node_modules/.bin/claude
if [ ! -x "$claude" ] && command -v npm >/dev/null; then
	step "installing Claude Code for the demo prompt (test/agents.sh claude-code)"
	"$top/test/agents.sh" claude-code || true
fi
(cd "$top" && go build -o "$dir/demomodel" ./test/demomodel)
"$dir/demomodel" >"$dir/model.url" &
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/model.url" ] && break; sleep 0.05; done

cat >"$dir/config.yaml" <<YAML
execution:
  backend: direct
  min_uid: $min_uid
  idle_timeout_ms: 5000
  socket_path_template: $dir/executors/{user}.sock
daemon:
  state_dir: $dir/state
gateway:
  enabled: true
  socket_path: $dir/gateway.sock
  upstreams: {anthropic: "$(cat "$dir/model.url")"}
YAML
cat >"$dir/agents.yaml" <<YAML
claude-code:
  binary: $claude
  env:
    ANTHROPIC_BASE_URL: $(cat "$dir/model.url")
    HOME: $dir/work/.home
    CLAUDE_CODE_MAX_RETRIES: "0"
YAML
export AGOR_SOCKET=$dir/daemon.sock

step "agor-daemon --config $dir/config.yaml (backend direct)"
"$bin/agor-daemon" --config "$dir/config.yaml" --listen "$AGOR_SOCKET" --executor "$dir/agor-executor" \
	--executor-root "$dir/work" --executor-agents "$dir/agents.yaml" --master-key "$dir/master.key" \
	--log-format text --log-level warn &
pids+=($!)
for _ in $(seq 100); do [ -S "$AGOR_SOCKET" ] && break; sleep 0.05; done

# agorctl works where it is run (in the shell's directory, when that is in
# the person's home); the demo's executor has its own root ($dir/work), so
# its commands run from outside any home, in that root.
cd "$dir"
step "agorctl executors start $user    (first use starts the executor)"
"$bin/agorctl" executors start "$user"
step "agorctl exec $user -- sh -c 'id -un; pwd'"
"$bin/agorctl" exec "$user" -- sh -c 'id -un; pwd'
step "printf 'sk-demo\\n' | agorctl creds set ANTHROPIC_API_KEY ${scope[*]}   (sealed; it stays in the daemon: the agent gets a token for the model gateway)"
printf 'sk-demo\n' | "$bin/agorctl" creds set ANTHROPIC_API_KEY "${scope[@]}"
if [ -x "$claude" ]; then
	step "agorctl prompt $user --mode bypassPermissions 'leave a note in a file'   (real Claude Code, stand-in model)"
	"$bin/agorctl" prompt "$user" --mode bypassPermissions 'leave a note in a file' || true
	echo "-- $dir/work/agent-demo.txt: $(cat "$dir/work/agent-demo.txt" 2>/dev/null || echo missing)"
	step "agorctl usage    (the gateway's ledger: each model request, its tokens and cost)"
	"$bin/agorctl" usage || true
else
	step "skipping the prompt: Claude Code is not installed (needs Node.js and npm; test/agents.sh claude-code)"
fi
step "printf 'id -un; stty size; exit 3\\n' | agorctl terminal --no-tty --shell /bin/sh $user"
printf 'id -un; stty size; exit 3\n' | "$bin/agorctl" terminal --no-tty --shell /bin/sh "$user" || echo "-- the shell's exit status came back: $?"
step "agorctl audit"
"$bin/agorctl" audit
echo "-- the key at rest: $(grep -rc sk-demo "$dir/state/credentials" | awk -F: '{n+=$2} END {print n+0}') clear-text copies in credentials/"
step "stopping the daemon (SIGTERM)"
kill -TERM "${pids[1]}"
wait "${pids[1]}" && echo "-- agor-daemon exited with status 0"
