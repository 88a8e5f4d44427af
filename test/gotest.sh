#!/usr/bin/env bash
# gotest.sh ARGS...: `go test ARGS`, its output as go test prints it, and
# each package's test time recorded under the current phase (test/timing.sh;
# packages run side by side, so their times add up to more than the phase's).
set -uo pipefail
here=$(dirname "$0")
. "$here/timing.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ -n "${AGOR_TIMES:-}" ]; then
	now=$(date +%s.%N)
	sed -n 's/^\(ok\|FAIL\)[[:space:]]\+\([^[:space:]]*\)[[:space:]]\+\([0-9.]*\)s.*/\2 \3/p' "$out" |
		while read -r pkg secs; do
			phase_record "$(awk -v n="$now" -v s="$secs" 'BEGIN { printf "%.3f", n - s }')" "$now" "${AGOR_PHASE:+$AGOR_PHASE > }${pkg#github.com/agor-sh/agor/}"
		done
fi
exit "$rc"
