# Resource limits per executor from the configuration, and usage per user.
# Sourced by checks.sh after daemon (uses lib.sh and daemon.sh's api).
#
# The container's cgroup controllers are not delegated on these machines
# (the host runs a hybrid hierarchy), so no limit is *enforced* here: these
# checks show that systemd holds the configured properties, and that
# agorctl doctor says whether the kernel applies them.

# Over the base (lib.sh), in config.d/50-limits.yaml: carol let in by name.
limits_base='execution:
  allowed_users: [carol]
'
# alice and bob are in agorusers, carol is not (she is let in by name):
# carol gets the default, bob the group's override, alice the group's and
# then her own.
limits_conf() {
	set_dropin 50-limits "$limits_base$(cat <<-EOF
	limits:
	  default: {memory_max: 1G, memory_high: 50%, cpu_weight: 100, tasks_max: 1024}
	  groups:
	    - {group: agorusers, memory_max: 2G, cpu_weight: 200}
	  users:
	    alice: {memory_max: $1, tasks_max: 4096}
	EOF
	)"
	restart_daemon
}

# shown USER: MemoryMax CPUWeight TasksMax of USER's executor service.
shown() { systemctl show -p MemoryMax,CPUWeight,TasksMax agor-executor@"$1".service | sort | tr '\n' ' '; }

limits_expect() {
	want "$(shown carol)" "CPUWeight=100 MemoryMax=1073741824 TasksMax=1024 "
	want "$(shown bob)" "CPUWeight=200 MemoryMax=2147483648 TasksMax=1024 "
	want "$(shown alice)" "CPUWeight=200 MemoryMax=$1 TasksMax=4096 "
}

limits_set() {
	limits_conf 3G
	api executors start alice bob carol >/dev/null
	limits_expect 3221225472
	local u
	for u in carol bob alice; do echo "$u: $(shown $u)"; done
	# A percentage goes as MemoryHighScale; systemd shows the bytes it made of it.
	local high total
	high=$(systemctl show -p MemoryHigh --value agor-executor@carol.service)
	total=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
	echo "memory_high: 50% -> MemoryHigh=$high (MemTotal $((total * 1024)))"
	awk "BEGIN{exit !($high > 0.49 * $total * 1024 && $high < 0.51 * $total * 1024)}"
	ls /run/systemd/system.control/agor-executor@alice.service.d/
	systemctl daemon-reload
	limits_expect 3221225472
	echo "after systemctl daemon-reload: unchanged (runtime drop-ins in /run/systemd/system.control)"
}
check "limits: default (carol), group override (bob), group then user override (alice) in systemctl show; they survive daemon-reload" limits_set

limits_follow() {
	local before
	before=$(systemctl show -p MainPID --value agor-executor@alice.service)
	limits_conf 512M # alice's override changes; the daemon restarts and reattaches
	limits_expect 536870912
	want "$(systemctl show -p MainPID --value agor-executor@alice.service)" "$before"
	echo "alice: $(shown alice) (same executor, pid $before: set live at reattach)"
	# Taking the override away gives her the group's value back.
	set_dropin 50-limits "$limits_base$(printf 'limits:\n  default: {memory_max: 1G, cpu_weight: 100, tasks_max: 1024}\n  groups: [{group: agorusers, memory_max: 2G, cpu_weight: 200}]\n')"
	restart_daemon
	api executors start alice >/dev/null
	want "$(shown alice)" "CPUWeight=200 MemoryMax=2147483648 TasksMax=1024 "
	echo "override removed: alice: $(shown alice)"
	limits_conf 3G
	api executors start alice >/dev/null
	limits_expect 3221225472
}
check "limits: a config change reaches running executors at systemctl restart agor-daemon (the override changed, then removed)" limits_follow

# The polkit rule lets agor set properties on an executor's service only.
limits_polkit() {
	local out
	out=$(as agor busctl call --allow-interactive-authorization=no org.freedesktop.systemd1 /org/freedesktop/systemd1 \
		org.freedesktop.systemd1.Manager SetUnitProperties 'sba(sv)' agor-executor@bob.service true 1 CPUWeight t 200 2>&1)
	echo "agor SetUnitProperties agor-executor@bob.service: allowed"
	for unit in agor-executor@bob.socket agor-executor@root.service agor-executors.slice systemd-journald.service; do
		if out=$(as agor busctl call --allow-interactive-authorization=no org.freedesktop.systemd1 /org/freedesktop/systemd1 \
			org.freedesktop.systemd1.Manager SetUnitProperties 'sba(sv)' "$unit" true 1 CPUWeight t 200 2>&1); then
			echo "agor may set properties on $unit"
			return 1
		fi
		echo "$out" | grep -E 'InteractiveAuthorizationRequired|AccessDenied|Access denied|Interactive authentication required' >/dev/null ||
			{ echo "$unit: unexpected error: $out"; return 1; }
	done
	echo "refused: agor-executor@bob.socket, agor-executor@root.service, agor-executors.slice, systemd-journald.service"
}
check "limits: polkit lets agor set-property on agor-executor@bob.service, refuses the socket, root, the slice and other units" limits_polkit

# doctor_limits: agorctl doctor's limits line: "STATUS detail".
doctor_limits() { { agorctl doctor || true; } | sed -n 's/^\(ok\|warn\|FAIL\) \+limits \+/\1 /p'; }
# doctor_enforced: the limits line says what the kernel does with bob's
# limits: ok when his cgroup has the memory controller's files, else FAIL
# saying the kernel enforces nothing (as in a container whose host
# delegates no controllers).
doctor_enforced() {
	local out cg
	cg=/sys/fs/cgroup$(systemctl show -p ControlGroup --value agor-executor@bob.service)
	out=$(doctor_limits)
	echo "$out"
	if [ -f "$cg/memory.max" ]; then
		echo "the kernel enforces $cg/memory.max = $(cat "$cg/memory.max")"
		[ "${out%% *}" = ok ]
		echo "$out" | grep 'limits the kernel enforces' >/dev/null
	else
		echo "$cg has no memory.max (controllers here: $(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || echo none)): the kernel enforces no memory limit"
		[ "${out%% *}" = FAIL ]
		echo "$out" | grep 'agor-executor@bob.service has no memory.max, so the kernel enforces no MemoryMax' >/dev/null
	fi
}
limits_doctor() {
	local out
	doctor_enforced
	systemctl set-property --runtime agor-executor@bob.service MemoryMax=5G
	out=$(doctor_limits)
	echo "after systemctl set-property --runtime bob MemoryMax=5G: $out"
	[ "${out%% *}" = FAIL ]
	echo "$out" | grep 'agor-executor@bob.service: MemoryMax is 5368709120, configured 2147483648' >/dev/null
	restart_daemon
	api executors start bob >/dev/null
	echo "after restarting the daemon:"
	doctor_enforced
}
check "limits: agorctl doctor compares the kernel's cgroup files (memory.max, pids.max, cpu.max) with the configuration and says when the kernel enforces nothing; names a property changed by hand, and the daemon's restart puts it back" limits_doctor

# usage_of USER [FIELD]: from agorctl executors --json, USER's usage FIELD
# (default cpu_usage_nsec); "null" when unknown. (The container's python3
# is python3-minimal, without json: one executor object per line, then sed.)
usage_of() {
	api executors --json | sed 's/{"user":/\n&/g' | grep "^{\"user\":\"$1\"" |
		sed -n "s/.*\"${2:-cpu_usage_nsec}\":\([0-9]*\|null\)[,}].*/\1/p"
}
# metric NAME USER: the value of series NAME{user="USER"}.
# (No curl in the container: daemonbench -get is a GET on the API socket.)
metric() { "$T/daemonbench" -get /v1/metrics | sed -n "s/^$1{user=\"$2\"} //p"; }

limits_usage() {
	# A fresh executor, so that nothing before this check is still ending
	# in alice's tree while it reads: once her earlier processes went
	# from 30 tasks to 29 as the loop began, and the growth was not seen.
	api executors stop alice >/dev/null
	api executors start alice >/dev/null
	local c0 c1 c2 m0 m1 t0 t1 table notes
	c0=$(usage_of alice)
	m0=$(usage_of alice memory_bytes)
	t0=$(usage_of alice tasks)
	api exec alice -- sh -c 'i=0; while [ $i -lt 5000000 ]; do i=$((i+1)); done' >/dev/null &
	local job=$! _i
	# The loop running (under load its start took more than the second
	# this once slept), then the daemon's reading of it: the tasks up.
	for _i in $(seq 200); do pgrep -u alice -f 'while \[ \$i -lt 5000000' >/dev/null && break; sleep 0.05; done
	for _i in $(seq 50); do
		c1=$(usage_of alice) m1=$(usage_of alice memory_bytes) t1=$(usage_of alice tasks)
		[ "$t1" = null ] || [ -z "$t1" ] || [ "$t0" = null ] || [ -z "$t0" ] || [ "$t1" -le "$t0" ] || break
		sleep 0.1
	done
	wait "$job"
	c2=$(usage_of alice)
	echo "alice CPU ns: before $c0, while running $c1, after $c2; memory bytes: before $m0, while running $m1; tasks: before $t0, while running $t1"
	table=$(api executors 2>/tmp/usage.notes)
	notes=$(cat /tmp/usage.notes)
	echo "$table"
	echo "$notes"
	if [ "$c0" = null ] || [ "$c1" -le "$c0" ] || [ "$c2" -le "$c1" ]; then echo "CPU time did not grow"; return 1; fi
	if [ $((c2 - c0)) -lt 500000000 ]; then echo "the loop cost less than 0.5 s of CPU?"; return 1; fi
	echo "$table" | grep -E "^alice +active +active +true +[0-9]+\.[0-9]{2}s " >/dev/null
	# systemd has no memory or pids controller for the unit here (not
	# delegated to the container): memory and tasks come from the
	# executor's process tree, and grow with the command.
	for v in "$m0" "$m1" "$t0" "$t1"; do [ "$v" != null ] && [ -n "$v" ] || { echo "memory or tasks unknown"; return 1; }; done
	if [ "$m1" -le "$m0" ] || [ "$t1" -le "$t0" ]; then echo "memory or tasks did not grow with the command"; return 1; fi
	echo "$table" | grep -E "^alice +active +active +true +[0-9]+\.[0-9]{2}s +[0-9.]+[KMG]i? +[0-9]+" >/dev/null || { echo "no memory/tasks in the table"; return 1; }
}
check "usage: alice's CPU time grows in agorctl executors --json while a CPU-bound command runs and its memory and tasks grow (from the process tree where systemd has no counter)" limits_usage

limits_metrics() {
	local before m after
	before=$(usage_of alice)
	m=$(metric agor_executor_cpu_seconds_total alice)
	after=$(usage_of alice)
	echo "agor_executor_cpu_seconds_total{user=\"alice\"} $m; agorctl executors --json before $before ns, after $after ns"
	awk "BEGIN{exit !($before/1e9 - 1e-9 <= $m && $m <= $after/1e9 + 1e-9)}"
	local field name
	for field in memory_bytes:agor_executor_memory_bytes tasks:agor_executor_tasks; do
		name=${field#*:}
		if [ "$(usage_of alice "${field%:*}")" = null ]; then
			test -z "$(metric "$name" alice)" # unknown is left out, not 0
			echo "$name: no series for alice (systemd has no number here)"
		else
			metric "$name" alice | grep -E '^[0-9]+$' >/dev/null
		fi
	done
}
check "usage: /v1/metrics' agor_executor_cpu_seconds_total{user=alice} carries the number agorctl executors --json reads (between two reads)" limits_metrics

limits_restore() {
	drop_dropin 50-limits
	api executors stop carol >/dev/null
	systemctl revert agor-executor@alice.service agor-executor@bob.service agor-executor@carol.service >/dev/null
	restart_daemon
	want "$(systemctl show -p MemoryMax --value agor-executor@alice.service)" infinity
}
check "limits: configuration and runtime properties back as daemon.sh left them (systemctl revert)" limits_restore
