# alice's executor is a Slurm job of hers on a compute node, submitted by
# her own executor on the login host, dialled back to the daemon.
check "alice's command runs as alice on a compute node" bash -c '
	out=$(as login alice agorctl exec alice -- sh -c "id -un; hostname") || { echo "$out"; exit 1; }
	echo "$out"
	[ "$(echo "$out" | head -n1)" = alice ] && echo "$out" | tail -n1 | grep -E "^node[12]$" >/dev/null'
check "the job is alice's own, running, named agor-executor" want '^alice RUNNING agor-executor node[12]$' \
	inside login squeue -h -o '%u %T %j %N'
check "agorctl executors shows the job" want 'alice' inside login agorctl executors list
