# Cold activation, and what hardening costs. Sourced by checks.sh (uses lib.sh).

# quiet_daemon CMD...: CMD with the daemon and its sockets stopped. What
# is timed is systemd's activation alone, by coldbench's own pings: a
# daemon connecting to an executor coldbench has just stopped starts it
# again ("did not stop", Debian 13, twice), and so may the daemon's own
# sockets, which start it at any connection (an executor's relay dials
# its gateway and egress sockets).
quiet_daemon() {
	local rc=0
	systemctl stop agor-daemon.socket agor-daemon.service
	"$@" || rc=$?
	systemctl start agor-daemon.socket agor-daemon.service
	if [ $rc != 0 ]; then
		echo "the daemon meanwhile: $(journalctl -u agor-daemon.service --since -3min -o cat --no-pager | grep -c '^serving\|msg=serving') starts in 3 min"
	fi
	return $rc
}

# bench_n: cycles a median is taken of (lib.sh's rounds: CI's are brief).
bench_n=$(rounds 21 3)

cold() {
	systemctl start agor-executor@alice.socket
	quiet_daemon "$T/coldbench" -socket /run/agor/executors/alice.sock -unit agor-executor@alice.service -n "$bench_n"
}
check "cold activation benchmark (unit as shipped, median of $bench_n)" cold

# The daemon's own: a cold ensure to the first pong, its RSS holding many
# live executors (u001...), and reading their usage.
daemon_bench() {
	local many=() pid i
	for i in $(seq -f %03g 1 "$(rounds 100 10)"); do many+=("u$i"); done
	"$T/daemonbench" -user alice -n "$bench_n"
	pid=$(systemctl show -p MainPID --value agor-daemon.service)
	"$T/daemonbench" -n 0 -many "$(IFS=,; echo "${many[*]}")" -pid "$pid"
	agorctl executors stop "${many[@]}" >/dev/null
}
check "daemon benchmark: cold ensure to first pong (median of $bench_n), RSS holding $(rounds 100 10) live executors, reading their usage (sequential vs concurrent)" daemon_bench

# Cold start of an environment's executor (issue 39) against the host's,
# both alice's, in environments.sh's py (added here when that concern did
# not run): the median of bench_n cycles each, two rounds interleaved so that a
# drift of the machine falls on both; printed, never asserted.
env_cold() {
	[ -e /etc/agor/environments/py.yaml ] || agorctl environments add py --root /opt/envroot.tar.gz --users alice >/dev/null || return 1
	# Both sockets listening (the prompt checks' setup stops alice's).
	as alice agorctl exec alice -- true </dev/null
	as alice agorctl exec --env py alice -- true </dev/null
	quiet_daemon env_cold_rounds
}

env_cold_rounds() {
	local r host env
	for r in 1 2; do
		host=$($T/coldbench -socket /run/agor/executors/alice.sock -unit agor-executor@alice.service -n "$bench_n" | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
		env=$($T/coldbench -socket /run/agor/executors/py/alice.sock -unit agor-env-py@alice.service -n "$bench_n" | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
		[ -n "$host" ] && [ -n "$env" ] || return 1
		echo "round $r: cold activation median host ${host} ms, environment py ${env} ms, ratio $(awk -v a="$env" -v b="$host" 'BEGIN { printf "%.2f", a / b }')"
	done
}
check "environments: cold activation of alice's executor in py vs on the host (medians of $bench_n, ratio)" env_cold

# Each row switches directive groups off for carol's instance with a
# drop-in, and measures exposure and cold activation.
variant() {
	local d=/etc/systemd/system/agor-executor@carol.service.d
	mkdir -p $d
	printf '[Service]\n%s\n' "$1" >$d/variant.conf
	systemctl daemon-reload
	systemctl start agor-executor@carol.socket
	local score ms
	score=$(systemd-analyze security agor-executor@carol.service --no-pager | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
	ms=$($T/coldbench -socket /run/agor/executors/carol.sock -unit agor-executor@carol.service -n "$bench_n" | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
	printf '%-44s %8s %10s\n' "$2" "$score" "$ms"
}
KERNEL='ProtectKernelModules=no
ProtectKernelLogs=no
ProtectControlGroups=no
ProtectProc=default'
FS='ProtectSystem=no
PrivateTmp=no
PrivateDevices=no'
UTS='ProtectHostname=no'
SECCOMP='SystemCallFilter=
SystemCallArchitectures='
hardening_table() {
	# carol runs the variants: the executor checks its own account against
	# the allowed groups, so she joins them now (the refusals are behind us).
	usermod -a -G agorusers carol
	printf '%-44s %8s %10s\n' "directive set" exposure "cold ms"
	variant "" "shipped"
	variant "$UTS" "shipped - ProtectHostname"
	variant "ProtectProc=default" "shipped - ProtectProc"
	variant "ProtectKernelTunables=no" "shipped - ProtectKernelTunables"
	variant "RestrictNamespaces=yes
SystemCallFilter=~@mount" "shipped - the sandbox's namespaces, mounts"
	variant "ProtectKernelLogs=no" "shipped - ProtectKernelLogs"
	variant "ProtectControlGroups=no" "shipped - ProtectControlGroups"
	variant "ProtectKernelModules=no" "shipped - ProtectKernelModules"
	variant "$KERNEL" "shipped - kernel/cgroup/proc protections"
	variant "$KERNEL
$UTS" "shipped - kernel protections - hostname"
	variant "$KERNEL
$UTS
$FS" "restrictions + seccomp only (no namespaces)"
	variant "$KERNEL
$UTS
$FS
$SECCOMP" "restrictions only"
	rm -rf /etc/systemd/system/agor-executor@carol.service.d
	systemctl daemon-reload
}
check "hardening table: directive set, exposure, cold activation median" quiet_daemon hardening_table
