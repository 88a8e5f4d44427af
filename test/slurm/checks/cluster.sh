# The cluster itself, before anything of ours: one identity everywhere,
# shared homes, and a job of alice's runs as alice on a compute node.
check "alice is the same account on every node (one directory)" bash -c '
	for n in login node1 node2; do
		[ "$(inside $n id -u alice)" = 20101 ] || { echo "$n: $(inside $n id alice 2>&1)"; exit 1; }
	done'
check "both compute nodes idle" want '^2$' bash -c 'inside login sinfo -h -N -o %T | grep -c idle'
check "alice's job runs as alice on a compute node" bash -c '
	out=$(as login alice srun -N1 --chdir=/home/alice sh -c "id -un; hostname")
	echo "$out"
	[ "$(echo "$out" | head -n1)" = alice ] && echo "$out" | tail -n1 | grep -E "^node[12]$" >/dev/null'
check "root may not run jobs (DisableRootJobs)" bash -c '! inside login srun -N1 true'
t0=$(date +%s%N)
as login alice srun -N1 true >/dev/null 2>&1 || true
echo "     srun as alice, start to exit: $((($(date +%s%N) - t0) / 1000000)) ms"
