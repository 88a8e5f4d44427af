# Sourced by .ci/run and the suites' harnesses: where the time goes.
#
# phase NAME CMD...: runs CMD and records "START END NAME" (epoch seconds,
# to the millisecond) in $AGOR_TIMES, if set; CMD's status is phase's.
# A name nests under $AGOR_PHASE ("make test-systemd > bookworm > egress"),
# which CMD inherits; test/timetable prints the file as a sorted table
# beside a committed one (test/ci-times.tsv).
# (Its locals are named apart: CMD may be a sourced concern file.)
phase() {
	local _phase_name=${AGOR_PHASE:+$AGOR_PHASE > }$1 _phase_t0 _phase_rc=0
	shift
	_phase_t0=$(date +%s.%N)
	AGOR_PHASE=$_phase_name "$@" || _phase_rc=$?
	phase_record "$_phase_t0" "$(date +%s.%N)" "$_phase_name"
	return $_phase_rc
}

# phase_record START END NAME: one line of $AGOR_TIMES, for a phase timed
# elsewhere (a concern inside a container, a Go package's tests).
phase_record() {
	[ -n "${AGOR_TIMES:-}" ] || return 0
	printf '%.3f\t%.3f\t%s\n' "$1" "$2" "$3" >>"$AGOR_TIMES"
}
