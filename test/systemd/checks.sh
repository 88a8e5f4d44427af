#!/usr/bin/env bash
# Runs inside the booted test container as root: one file per concern,
# in this order (later ones build on what earlier ones set up); prints
# PASS/FAIL per check and a closing "N passed, M failed".
set -uo pipefail
T=/opt/tests
# shellcheck source=lib.sh
. "$T/lib.sh"
# shellcheck source=scenes.sh
. "$T/scenes.sh"
concerns="install readme socket polkit backend daemon limits prompt modes egress terminal cockpit gateway prewarm files sandbox escapes environments identity accounts doctor quotas fulldisk bench package upgrade"
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
echo "root filesystem: $(df -h --output=used,avail / | tail -n 1); $(journalctl --disk-usage 2>&1) ($(du -sh /var/log/journal /run/log/journal 2>/dev/null | tr '\t\n' ': '))"
# Who wrote the journal, in bytes of message (a flood shows here).
journalctl -o json --output-fields=_SYSTEMD_UNIT,SYSLOG_IDENTIFIER,MESSAGE --no-pager 2>/dev/null | python3 -c '
import json, sys, collections
n, c = collections.Counter(), collections.Counter()
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    k = e.get("_SYSTEMD_UNIT") or e.get("SYSLOG_IDENTIFIER") or "?"
    k = k.split("@")[0] + ("@" if "@" in k else "")
    m = e.get("MESSAGE") or ""
    n[k] += len(m) if isinstance(m, str) else len(m or [])
    c[k] += 1
print("journal by unit: " + ", ".join("%s %d KiB in %d lines" % (k, v // 1024, c[k]) for k, v in n.most_common(6)))
' || true
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
