#!/usr/bin/env bash
# Runs inside the booted test container as root: one file per concern,
# in this order (later ones build on what earlier ones set up); prints
# PASS/FAIL per check and a closing "N passed, M failed".
set -uo pipefail
T=/opt/tests
# shellcheck source=lib.sh
. "$T/lib.sh"
for concern in install socket polkit backend daemon prompt terminal files sandbox identity accounts doctor bench package upgrade; do
	# shellcheck disable=SC1090
	. "$T/$concern.sh"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
