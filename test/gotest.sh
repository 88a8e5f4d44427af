#!/usr/bin/env bash
# gotest.sh ARGS...: `go test ARGS`, its output as go test prints it, and
# each package's test time recorded under the current phase (test/timing.sh;
# packages run side by side, so their times add up to more than the phase's).
# A package is recorded as ending when its result line appears: go test
# prints the packages' results in the order named, so that is when it ended
# or, behind a longer package named before it, later; its seconds are its
# own either way. (Taking the end of the whole go test for every package
# placed them all there.)
set -uo pipefail
here=$(dirname "$0")
. "$here/timing.sh"
go test "$@" 2>&1 | while IFS= read -r line || [ -n "$line" ]; do
	printf '%s\n' "$line"
	[ -n "${AGOR_TIMES:-}" ] || continue
	if [[ $line =~ ^(ok|FAIL)[[:space:]]+([^[:space:]]+)[[:space:]]+([0-9.]+)s ]]; then
		now=$(date +%s.%N)
		start=$(awk -v n="$now" -v s="${BASH_REMATCH[3]}" 'BEGIN { printf "%.3f", n - s }')
		phase_record "$start" "$now" "${AGOR_PHASE:+$AGOR_PHASE > }${BASH_REMATCH[2]#github.com/agor-sh/agor/}"
	fi
done
exit "${PIPESTATUS[0]}"
