# alice's executor is a Slurm job of hers on a compute node, submitted by
# her own executor on the login host, dialled back to the daemon.
check "alice's command runs as alice on a compute node" bash -c '
	out=$(as login alice agorctl exec alice -- sh -c "id -un; hostname") || { echo "$out"; exit 1; }
	echo "$out"
	[ "$(echo "$out" | head -n1)" = alice ] && echo "$out" | tail -n1 | grep -E "^node[12]$" >/dev/null'
check "the job is alice's own, running, named agor-executor" want '^alice RUNNING agor-executor node[12]$' \
	inside login squeue -h -o '%u %T %j %N'
check "agorctl executors shows the job id, node and state" bash -c '
	job=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
	out=$(inside login agorctl executors list 2>&1); echo "$out"
	echo "$out" | grep -E "^alice +dial-back +active +true .* $job +node[12] +RUNNING" >/dev/null'
check "agorctl executors --json carries them" want '"job_id":"[0-9]+","node":"node[12]","job_state":"RUNNING"' inside login agorctl executors list --json
# Kept for the replay check of lifecycle.sh: the token in alice's job
# script, as root (or alice) could read it while the job runs.
job=$(inside login squeue -h -u alice -t RUNNING -o %i | head -n1)
echo "$job" >"$work/alice-job"
inside login scontrol write batch_script "$job" - 2>/dev/null | sed -n '/AGOR_TOKEN/{n;p;q}' >"$work/alice-token" || true
