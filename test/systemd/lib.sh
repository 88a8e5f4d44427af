# The suite's helpers, sourced by checks.sh inside the container: check runs
# one named check, as/ping_as/want are what the concern files share.
T=/opt/tests
pass=0
fail=0
skipped=0

# skip NAME REASON: a check that cannot run here, said so (never a pass).
skip() {
	echo "SKIP $1: $2"
	skipped=$((skipped + 1))
}

# check NAME FUNC...: runs FUNC with errexit in force (not inside an if,
# where bash would ignore it), so the first failing step fails the check.
check() {
	local name=$1 out rc
	shift
	out=$(set -e; "$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS $name"
		pass=$((pass + 1))
	else
		echo "FAIL $name"
		fail=$((fail + 1))
	fi
	[ -z "$out" ] || echo "$out" | sed 's/^/     /'
}

as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }
ping_as() { as "$1" agorctl executors ping --socket "/run/agor/executors/$2.sock" --timeout 10s; }
want() { [ "$1" = "$2" ] || { echo "got '$1', want '$2'"; return 1; }; }
# no_units PATTERN...: no unit matching is loaded (none was started).
no_units() { test -z "$(systemctl list-units --all --plain --no-legend "$@")" || { systemctl list-units --all --no-legend "$@"; return 1; }; }
