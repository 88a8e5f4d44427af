# The job's life: scancel fails the call in flight at once and the next call
# starts a new job; a restarted daemon keeps the job and takes its dial-back
# again; an idle executor ends its job (COMPLETED).
alice_job() { inside login squeue -h -u alice -t RUNNING,PENDING -o %i | head -n1; }
check "scancel fails the in-flight call promptly; the next call starts a new job" bash -c '
	as login alice agorctl exec alice -- true >/dev/null || exit 1
	job=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	( as login alice agorctl exec alice -- sleep 60 >/tmp/slurm-sleep.out 2>&1; echo $? >/tmp/slurm-sleep.rc ) &
	sleep 2
	t0=$(date +%s%N)
	inside login scancel "$job"
	wait
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "in-flight exec ended ${ms} ms after scancel: $(cat /tmp/slurm-sleep.out)"
	[ "$(cat /tmp/slurm-sleep.rc)" != 0 ] && [ "$ms" -lt 30000 ] || exit 1
	out=$(as login alice agorctl exec alice -- hostname) || { echo "$out"; exit 1; }
	new=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	echo "job $job cancelled; the next call ran on $out in job $new"
	[ -n "$new" ] && [ "$new" != "$job" ]'
check "restarting the daemon keeps the job and reconnects" bash -c '
	before=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	inside login systemctl restart agor-daemon
	out=$(as login alice agorctl exec alice -- id -un) || { echo "$out"; exit 1; }
	after=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	echo "job before $before, after $after: $out"
	[ "$out" = alice ] && [ "$before" = "$after" ]'
check "idle exit ends the job: COMPLETED" bash -c '
	job=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	[ -n "$job" ] || exit 1
	for _ in $(seq 120); do
		state=$(inside login scontrol show job "$job" -o | grep -o "JobState=[A-Z]*")
		[ "$state" = JobState=COMPLETED ] && { echo "job $job $state"; exit 0; }
		sleep 0.5
	done
	echo "job $job still $state after 60 s"; exit 1'
check "the ended job's token, replayed, is refused" bash -c '
	tok=$(cat "$work/alice-token"); [ -n "$tok" ] || { echo "no token kept"; exit 1; }
	out=$(hello "$tok" alice "$(cat "$work/alice-job")"); echo "$out"; echo "$out" | grep "\"error\"" >/dev/null'
