# Cold activation, and what hardening costs. Sourced by checks.sh (uses lib.sh).

cold() { $T/coldbench -socket /run/agor/executors/alice.sock -unit agor-executor@alice.service -n 21; }
check "cold activation benchmark (unit as shipped)" cold

# Cold start of an environment's executor (issue 39) against the host's,
# both alice's, in environments.sh's py (added here when that concern did
# not run): the median of 21 cycles each, two rounds interleaved so that a
# drift of the machine falls on both; printed, never asserted.
env_cold() {
	local r host env
	[ -e /etc/agor/environments/py.yaml ] || agorctl environments add py --root /opt/envroot.tar.gz --users alice >/dev/null || return 1
	# Both sockets listening (the prompt checks' setup stops alice's).
	as alice agorctl exec alice -- true </dev/null
	as alice agorctl exec --env py alice -- true </dev/null
	# What is timed is systemd's activation, by coldbench's own pings: the
	# daemon, connected to both executors, is stopped meanwhile, so that no
	# connection of its starts a unit coldbench has just stopped (once, on
	# Debian 13: "agor-executor@alice.service did not stop").
	systemctl stop agor-daemon.service
	for r in 1 2; do
		host=$($T/coldbench -socket /run/agor/executors/alice.sock -unit agor-executor@alice.service -n 21 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
		env=$($T/coldbench -socket /run/agor/executors/py/alice.sock -unit agor-env-py@alice.service -n 21 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
		[ -n "$host" ] && [ -n "$env" ] || { systemctl start agor-daemon.service; return 1; }
		echo "round $r: cold activation median host ${host} ms, environment py ${env} ms, ratio $(awk -v a="$env" -v b="$host" 'BEGIN { printf "%.2f", a / b }')"
	done
	systemctl start agor-daemon.service
}
check "environments: cold activation of alice's executor in py vs on the host (medians of 21, ratio)" env_cold

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
	ms=$($T/coldbench -socket /run/agor/executors/carol.sock -unit agor-executor@carol.service -n 21 | sed -n 's/.*median=\([0-9.]*\).*/\1/p')
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
	variant "ProtectKernelTunables=yes" "shipped + ProtectKernelTunables"
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
check "hardening table: directive set, exposure, cold activation median" hardening_table
