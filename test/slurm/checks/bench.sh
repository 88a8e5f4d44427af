# Numbers: a job's start through the queue to a pinged executor, the ping
# over the dial-back's TLS link, the daemon's watch of 100 jobs (one
# squeue), and the same start end to end through the daemon's API.
check "dialbench: job start, TLS ping, watch of 100 jobs" bash -c 'inside login /opt/tests/dialbench | tee "$work/dialbench.txt"'
cat "$work/dialbench.txt" 2>/dev/null | sed 's/^/     /'
ready_through_daemon() {
	local times=() t0 ms
	for _ in $(seq 10); do
		inside login agorctl executors stop alice >/dev/null 2>&1 || true
		t0=$(date +%s%N)
		inside login agorctl executors start alice >/dev/null || return 1
		times+=($((($(date +%s%N) - t0) / 1000000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "agorctl executors start alice (API, submit through her executor, queue, dial-back, ping): median %d ms of %d (min %d, max %d)\n", a[int((NR+1)/2)], NR, a[1], a[NR]}' | tee "$work/ready.txt"
}
check "executor ready through the daemon, median of 10" ready_through_daemon
cat "$work/ready.txt" 2>/dev/null | sed 's/^/     /'
