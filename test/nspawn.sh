# Sourced by the container suites (test/systemd/run.sh, test/slurm/run.sh):
# what both need of the host.

# host_tools CMD:PACKAGE...: installs the Debian packages of the commands
# the host lacks.
host_tools() {
	local need=() t
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
	done
	[ ${#need[@]} -gt 0 ] || return 0
	echo "== installing ${need[*]}"
	apt_locked apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# apt_locked CMD...: CMD while no other of the project's apt-get runs
# (test/images.sh installs its tools while make test's deps.sh installs
# its own; dpkg's own lock would fail the second at once).
apt_locked() { flock /tmp/agor-apt.lock "$@"; }

# join_cgroup CG PID: moves PID into cgroup CG of every writable hierarchy
# (cpuset's needs its cpus and mems first), so that a container and all it
# starts can be found and removed afterwards.
join_cgroup() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[ -w "$h" ] || continue
		mkdir -p "$h$1"
		if [ -f "${h}cpuset.cpus" ]; then
			cat "${h}cpuset.cpus" >"$h$1/cpuset.cpus"
			cat "${h}cpuset.mems" >"$h$1/cpuset.mems"
		fi
		echo "$2" >"$h$1/cgroup.procs"
	done
}

# leave_cgroup CG: removes what join_cgroup made, once its processes are gone.
leave_cgroup() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[ -d "$h$1" ] && find "$h$1" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	return 0
}
