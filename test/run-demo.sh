#!/usr/bin/env bash
# The demo behind `make run`: start an executor by hand on a private
# socket (as nobody when run as root, since an executor refuses root),
# ping it with agorctl, and watch it exit by itself when idle.
set -euo pipefail
bin=${1:-bin}
dir=$(mktemp -d /tmp/agor-demo.XXXXXX)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
sock=$dir/executor.sock

run_as=()
if [ "$(id -u)" = 0 ]; then
	chown nobody: "$dir"
	cp "$bin/agor-executor" "$dir/" && chmod 755 "$dir/agor-executor"
	exe=$dir/agor-executor
	run_as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
else
	exe=$bin/agor-executor
fi

echo "== starting $exe --listen $sock (idle timeout 3s)"
"${run_as[@]}" "$exe" --listen "$sock" --daemon-user "$(id -u)" --idle-timeout 3s --log-format text &
pid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done

for i in 1 2 3; do
	echo "== agorctl executor ping ($i)"
	"$bin/agorctl" executor ping --socket "$sock"
done
echo "== waiting for the executor to exit by itself when idle"
wait "$pid" && echo "== executor exited with status 0"
