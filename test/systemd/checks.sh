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
# The concerns in order, and the releases each runs on: concerns.txt (and
# docs/testing.md, which says why). On a release a concern does not run on,
# its file is still read, for the helpers later concerns use, with check
# and skip saying only that it ran on the other ("ONCE").
release=$(. /etc/os-release && echo "$VERSION_CODENAME")
concerns=$(awk '!/^#/ && NF { print $1 }' "$T/concerns.txt")
# AGOR_SUITE_ONLY="install daemon prompt sandbox" make test-systemd runs those
# (in this order; later files may need what earlier ones set up), whatever
# the release.
[ -s "$T/only" ] && concerns=$(cat "$T/only")
# runs_here CONCERN: whether CONCERN's checks run on this release, and in
# this container: a whole run boots Debian 12 twice, side by side, and
# the harness says which part this one runs (AGOR_SUITE_PART, matched
# against concerns.txt's third column; unset, every part).
part=${AGOR_SUITE_PART:-}
runs_here() {
	[ -s "$T/only" ] && return 0
	awk -v c="$1" -v r="$release" -v p="$part" '$1 == c {
		n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == r) f = 1
		if (p != "" && $3 != "") { f2 = 0; n = split($3, b, ","); for (i = 1; i <= n; i++) if (b[i] == p) f2 = 1; f = f && f2 }
	} END { exit !f }' "$T/concerns.txt"
}
# elsewhere CONCERN: where CONCERN's checks run instead (for the log).
elsewhere() {
	awk -v c="$1" -v r="$release" '$1 == c { if (index("," $2 ",", "," r ",") && $3 != "") print "Debian 12'"'"'s part " $3; else print $2 }' "$T/concerns.txt"
}
# A concern written NAME*N runs N times in a row (the egress concern in a
# loop under load: AGOR_SUITE_ONLY="install egress*20").
# Each concern's time (and each check's, lib.sh) for the harness's table.
mkdir -p /var/log/agor-suite
for concern in $concerns; do
	times=1
	case $concern in *'*'*) times=${concern#*\*} concern=${concern%%\**} ;; esac
	suite_once=
	runs_here "$concern" || suite_once=$(elsewhere "$concern")
	[ -z "$suite_once" ] || echo "ONCE $concern: runs in $suite_once (docs/testing.md says why)"
	for _ in $(seq "$times"); do
		t0=$(date +%s.%N)
		# shellcheck disable=SC1090
		. "$T/$concern.sh"
		[ -n "$suite_once" ] || printf '%s\t%s\t%s\n' "$t0" "$(date +%s.%N)" "$concern" >>/var/log/agor-suite/times.tsv
	done
done
suite_once=

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
