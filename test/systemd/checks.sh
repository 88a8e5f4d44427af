#!/usr/bin/env bash
# Runs inside the booted test container as root: one file per concern,
# in this order (later ones build on what earlier ones set up); prints
# PASS/FAIL per check and a closing "N passed, M failed".
set -uo pipefail
T=/opt/tests
# shellcheck source=lib.sh
. "$T/lib.sh"
concerns="install readme socket polkit backend daemon limits prompt modes egress terminal cockpit files sandbox identity accounts doctor quotas fulldisk bench package upgrade"
# AGOR_SUITE_ONLY="install daemon prompt sandbox" make test-systemd runs those
# (in this order; later files may need what earlier ones set up).
[ -s "$T/only" ] && concerns=$(cat "$T/only")
# A concern written NAME*N runs N times in a row (the egress concern in a
# loop under load: AGOR_SUITE_ONLY="install egress*20").
for concern in $concerns; do
	times=1
	case $concern in *'*'*) times=${concern#*\*} concern=${concern%%\**} ;; esac
	for _ in $(seq "$times"); do
		# shellcheck disable=SC1090
		. "$T/$concern.sh"
	done
done

# What the run left on the root tmpfs and in the journal (both bounded).
echo "root filesystem: $(df -h --output=used,avail / | tail -n 1); $(journalctl --disk-usage 2>&1)"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
