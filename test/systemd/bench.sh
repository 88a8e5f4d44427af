# Cold activation, and what hardening costs. Sourced by checks.sh (uses lib.sh).

cold() { $T/coldbench -socket /run/agor/executors/alice.sock -unit agor-executor@alice.service -n 21; }
check "cold activation benchmark (unit as shipped)" cold

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
