# The executor socket and its peers, and idle exit with re-activation. Sourced by checks.sh (uses lib.sh).

start_socket() {
	systemctl start agor-executor@alice.socket
	want "$(stat -c '%U:%G %a %F' /run/agor/executors/alice.sock)" "root:agor 660 socket"
}
check "systemctl start agor-executor@alice.socket: root:agor 0660 socket" start_socket

ping_alice() {
	local out
	out=$(ping_as agor alice) || { echo "$out"; return 1; }
	echo "$out"
	want "$(echo "$out" | sed -n 's/.*"uid":\([0-9]*\).*/\1/p')" "$(id -u alice)"
	want "$(echo "$out" | sed -n 's/.*"user":"\([^"]*\)".*/\1/p')" alice
	want "$(systemctl show -p User --value agor-executor@alice.service)" alice
}
check "agor connects, first connect activates, ping reports uid/user alice" ping_alice

others_refused() {
	for u in bob carol; do
		if out=$(ping_as "$u" alice 2>&1); then echo "$u was served: $out"; return 1; fi
		echo "$u: $out"
	done
}
check "other ordinary users cannot connect" others_refused

journal_fields() {
	sleep 0.5
	local n
	n=$(journalctl -u agor-executor@alice.service AGOR_USER=alice -o cat --no-pager | wc -l)
	journalctl -u agor-executor@alice.service AGOR_USER=alice --no-pager -o verbose -n 1 | grep -E 'AGOR_USER=alice|MESSAGE='
	[ "$n" -gt 0 ]
}
check "journalctl -u agor-executor@alice.service AGOR_USER=alice" journal_fields

# --- idle exit and re-activation -------------------------------------------------
idle_cycles() {
	mkdir -p /etc/systemd/system/agor-executor@bob.service.d
	printf '[Service]\nEnvironment=AGOR_EXECUTOR_IDLE_TIMEOUT=50ms\n' >/etc/systemd/system/agor-executor@bob.service.d/idle.conf
	systemctl daemon-reload
	systemctl start agor-executor@bob.socket
	local i
	for i in $(seq 50); do
		ping_as agor bob >/dev/null || { echo "cycle $i: ping failed"; systemctl status agor-executor@bob.socket agor-executor@bob.service --no-pager; return 1; }
		for _ in $(seq 100); do
			[ "$(systemctl is-active agor-executor@bob.service)" = inactive ] && break
			sleep 0.02
		done
		want "$(systemctl is-active agor-executor@bob.service)" inactive || { echo "cycle $i: service did not exit when idle"; return 1; }
	done
	want "$(systemctl show -p ActiveState --value agor-executor@bob.socket)" active
	want "$(systemctl show -p Result --value agor-executor@bob.socket)" success
	want "$(systemctl show -p Result --value agor-executor@bob.service)" success
	rm -r /etc/systemd/system/agor-executor@bob.service.d # later checks want bob's default idle time
	systemctl daemon-reload
	echo "50 idle exits and re-activations; socket active/success, service result success"
}
check "idle exit and re-activation 50 times, no failed or trigger-limit state" idle_cycles
