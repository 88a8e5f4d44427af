#!/usr/bin/env bash
# The demo behind `make run`: agor-daemon in direct mode (no systemd
# needed) on a private socket with its own state; it starts the executor
# on first use, runs a command there, stores an API key sealed, and shows
# the audit trail. Run as root, executors run as "nobody" (an executor
# never runs as root); as anyone else, as that user.
set -euo pipefail
bin=${1:-bin}
dir=$(mktemp -d /tmp/agor-demo.XXXXXX)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir -m 700 "$dir/state"
cp "$bin/agor-executor" "$dir/" && chmod 755 "$dir/agor-executor"
user=$(id -un)
min_uid=1000
if [ "$(id -u)" = 0 ]; then
	user=nobody
	min_uid=1
	mkdir -m 777 "$dir/work" # nobody's home does not exist
	root_flag=(--executor-root "$dir/work")
else
	root_flag=()
fi
cat >"$dir/config.yaml" <<YAML
execution:
  backend: direct
  min_uid: $min_uid
  idle_timeout_ms: 5000
  socket_path_template: $dir/executors/{user}.sock
daemon:
  state_dir: $dir/state
YAML
export AGOR_SOCKET=$dir/daemon.sock

echo "== agor-daemon --config $dir/config.yaml (backend direct)"
"$bin/agor-daemon" --config "$dir/config.yaml" --listen "$AGOR_SOCKET" --executor "$dir/agor-executor" \
	"${root_flag[@]}" --master-key "$dir/master.key" --log-format text &
pid=$!
for _ in $(seq 100); do [ -S "$AGOR_SOCKET" ] && break; sleep 0.05; done

echo "== agorctl executors start $user    (first use starts the executor)"
"$bin/agorctl" executors start "$user"
echo "== agorctl exec $user -- sh -c 'id -un; pwd'"
"$bin/agorctl" exec "$user" -- sh -c 'id -un; pwd'
echo "== printf 'sk-demo\\n' | agorctl creds set ANTHROPIC_API_KEY    (sealed; never shown again)"
printf 'sk-demo\n' | "$bin/agorctl" creds set ANTHROPIC_API_KEY
echo "== agorctl executors"
"$bin/agorctl" executors
echo "== agorctl audit"
"$bin/agorctl" audit
echo "== the key at rest: $(grep -c sk-demo "$dir/state/credentials.json" || true) clear-text copies in credentials.json"
echo "== stopping the daemon (SIGTERM)"
kill -TERM "$pid"
wait "$pid" && echo "== agor-daemon exited with status 0"
