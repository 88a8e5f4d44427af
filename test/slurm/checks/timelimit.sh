# A job nearing its time limit is told (sbatch --signal=B:USR1@150): bob's
# executor (time_limit 3 min) stops, its job ends COMPLETED rather than
# killed at the limit, and his session's next prompt resumes in a new job.
bob_session() { as login bob agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4; }
time_limit_resume() {
	start_model || return 1
	local out job state s new
	out=$(as login bob agorctl prompt bob 'first' --mode bypassPermissions 2>&1)
	echo "$out" | grep '^completed' >/dev/null || { echo "$out"; return 1; }
	job=$(inside login squeue -h -u bob -o %i | head -n1)
	inside login scontrol show job "$job" -o | grep -o 'TimeLimit=[^ ]*'
	for _ in $(seq 240); do
		state=$(inside login scontrol show job "$job" -o | grep -o 'JobState=[A-Z]*')
		[ "$state" = JobState=RUNNING ] || break
		sleep 0.5
	done
	echo "job $job: $state"
	[ "$state" = JobState=COMPLETED ] || return 1
	grep 'nears its time limit' "$work/home/bob/.agor-executor-$job.log" || { cat "$work/home/bob/.agor-executor-$job.log"; return 1; }
	s=$(bob_session)
	out=$(as login bob agorctl prompt bob 'again' --session "$s" --mode bypassPermissions 2>&1)
	echo "$out" | grep '^completed' >/dev/null || { echo "$out"; return 1; }
	new=$(inside login squeue -h -u bob -t RUNNING -o %i | head -n1)
	echo "session $s continued in job $new"
	[ -n "$new" ] && [ "$new" != "$job" ]
}
check "near its time limit the job is told and ends; the session resumes in a new job" time_limit_resume
