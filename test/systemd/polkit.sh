# The polkit rule, asked by the real polkitd as agor over D-Bus. Sourced by checks.sh (uses lib.sh).

# dbus USER METHOD SIGNATURE ARGS...: a systemd Manager call as USER.
dbus() {
	local user=$1 method=$2
	shift 2
	as "$user" busctl call --allow-interactive-authorization=no org.freedesktop.systemd1 /org/freedesktop/systemd1 \
		org.freedesktop.systemd1.Manager "$method" "$@" 2>&1
}
allowed() { local out; out=$(dbus "$@") || { echo "refused: $*: $out"; return 1; }; }
refused() {
	local out
	if out=$(dbus "$@"); then echo "allowed: $*"; return 1; fi
	echo "$out" | grep -E 'InteractiveAuthorizationRequired|AccessDenied|Access denied|Interactive authentication required' >/dev/null ||
		{ echo "$*: unexpected error: $out"; return 1; }
}
polkit_agor() {
	allowed agor StartUnit ss agor-executor@bob.socket replace
	allowed agor StopUnit ss agor-executor@bob.socket replace
	allowed agor RestartUnit ss agor-executor@bob.socket replace
	# systemd answers "not loaded" before it asks polkit, so reset-failed
	# goes to a loaded unit.
	allowed agor ResetFailedUnit s agor-executor@bob.socket
	allowed agor StopUnit ss agor-executor@bob.socket replace
	echo "agor: start, stop, restart, reset-failed of agor-executor@bob allowed"
}
check "polkit: agor may start/stop/restart/reset-failed agor-executor@bob" polkit_agor
polkit_refusals() {
	systemctl start agor-executor@bob.socket # loaded, so polkit is asked
	refused agor StartUnit ss agor-executor@root.socket replace
	refused agor StartUnit ss agor-executor@root.service replace
	refused agor RestartUnit ss systemd-journald.service replace
	refused agor StartUnit ss other@bob.service replace
	refused agor StartUnit ss 'agor-executor@r\x6fot.service' replace # %I would make it root
	refused agor StartUnit ss agor-executor@mary-jane.socket replace   # not systemd-escape's form
	refused agor ReloadUnit ss agor-executor@bob.socket replace
	refused agor KillUnit ssi agor-executor@bob.socket all 9
	refused carol StartUnit ss agor-executor@carol.socket replace
	refused carol StopUnit ss agor-executor@alice.socket replace
	echo "refused: @root and r\\x6fot, journald, other units, unescaped names, reload and kill; everything for carol"
}
check "polkit: everything else refused (AccessDenied or InteractiveAuthorizationRequired)" polkit_refusals
