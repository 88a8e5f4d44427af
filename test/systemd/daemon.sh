# agor-daemon under its packaged units, with the polkit rule in force. Sourced by checks.sh (uses lib.sh).

api() { agorctl "$@"; } # as root, an admin of the API at /run/agor/daemon.sock
daemon_running() {
	want "$(systemctl is-active agor-daemon.socket agor-daemon.service | tr '\n' ' ')" "active active "
	want "$(systemctl is-enabled agor-daemon.service)" enabled
	want "$(systemctl show -p User --value agor-daemon.service)" agor
	local pid
	pid=$(systemctl show -p MainPID --value agor-daemon.service)
	want "$(stat -c %U /proc/$pid)" agor
	want "$(stat -c '%U:%G %a %F' /run/agor/daemon.sock)" "agor:agor 666 socket"
	want "$(stat -c '%U:%G %a' /etc/agor/master.key)" "root:root 600"
	test -f /var/lib/agor/audit.jsonl
	# grep without -q: under pipefail an early exit would fail journalctl with SIGPIPE
	journalctl -u agor-daemon.service -o cat --no-pager | grep -x serving >/dev/null
	echo "agor-daemon pid $pid runs as agor, READY (Type=notify: active), API socket 0666"
}
check "agor-daemon runs as agor under the packaged units, enabled and ready" daemon_running

daemon_first_use() {
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	local out
	out=$(api executors start alice)
	echo "$out"
	echo "$out" | grep "^alice: running as alice (uid $(id -u alice)), pid [0-9]*, up " >/dev/null
	out=$(api executors start alice --json)
	echo "$out"
	want "$(echo "$out" | sed -n 's/.*"uid":\([0-9]*\).*/\1/p')" "$(id -u alice)"
	want "$(systemctl is-active agor-executor@alice.service)" active
	want "$(as alice agorctl exec alice -- id -un)" alice
	if out=$(as bob agorctl executors start alice 2>&1); then echo "bob started alice's executor"; return 1; fi
	echo "bob for alice: $out"
	echo "$out" | grep not_yourself >/dev/null
}
check "daemon brings up alice's executor on first use (StartUnit under polkit), ping uid alice; users act only as themselves" daemon_first_use

daemon_refusals() {
	base_config # after readme.sh's reinstall: carol is refused by the suite's allowed_groups
	restart_daemon
	local out u
	for u in root no-such-user carol; do
		if out=$(api executors start "$u" 2>&1); then echo "daemon started $u"; return 1; fi
		echo "$u: $out"
	done
	no_units 'agor-executor@root*' 'agor-executor@no-such-user*' 'agor-executor@carol*'
	api audit --user carol >/dev/null
}
check "daemon: root, a missing user and a user not allowed by config get a clear error, no unit started" daemon_refusals

daemon_crash() {
	api executors start alice >/dev/null
	local pid t0 t1 out rc newpid
	pid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	api exec alice -- sleep 30 >/tmp/crash.out 2>&1 &
	local client=$!
	sleep 0.5
	t0=$(date +%s%N)
	kill -9 "$pid"
	rc=0
	wait "$client" || rc=$?
	t1=$(date +%s%N)
	out=$(cat /tmp/crash.out)
	echo "in-flight exec failed $(( (t1 - t0) / 1000000 )) ms after kill -9 of executor $pid (exit $rc): $out"
	# Apart: as one && list, errexit would let a request that succeeded by.
	[ "$rc" -ne 0 ]
	grep executor_crashed >/dev/null <<<"$out"
	[ $(( (t1 - t0) / 1000000 )) -lt 1000 ]
	want "$(api exec alice -- id -un)" alice
	newpid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	[ "$newpid" != "$pid" ] && [ "$newpid" != 0 ]
	echo "next request re-activated it: pid $newpid"
}
check "kill -9 of the executor under a long request: the request fails as executor crashed within 1 s; the next one re-activates" daemon_crash

daemon_restart() {
	api executors start alice bob >/dev/null
	local a b
	a=$(systemctl show -p MainPID --value agor-executor@alice.service)
	b=$(systemctl show -p MainPID --value agor-executor@bob.service)
	local since
	since=$(date '+%Y-%m-%d %H:%M:%S')
	restart_daemon
	local u
	for u in alice bob; do
		test -n "$(journalctl -u agor-daemon.service --since "$since" MESSAGE=reattached AGOR_USER=$u -o cat --no-pager)" ||
			{ echo "no 'reattached' journal entry with AGOR_USER=$u; the daemon's journal since the restart:"
			  journalctl -u agor-daemon.service --since "$since" -o json --no-pager | grep -o '"MESSAGE":"[^"]*"\|"AGOR_USER":"[^"]*"\|"AGOR_ERR":"[^"]*"' | paste -sd' '
			  systemctl list-units --all --no-legend 'agor-executor@bob*'; return 1; }
	done
	want "$(api exec alice -- id -un)" alice
	want "$(systemctl show -p MainPID --value agor-executor@alice.service)" "$a"
	want "$(systemctl show -p MainPID --value agor-executor@bob.service)" "$b"
	echo "after systemctl restart agor-daemon: alice pid $a and bob pid $b unchanged"
}
check "systemctl restart agor-daemon: it lists and reattaches to running executors, PIDs unchanged" daemon_restart

daemon_20() {
	local users=() u out
	for i in $(seq -w 1 20); do users+=("user$i"); done
	out=$(api executors start --json "${users[@]}")
	for u in "${users[@]}"; do
		grep -q "^{\"user\":\"$u\".*\"uid\":$(id -u "$u")," <<<"$out" || { echo "no answer from $u"; echo "$out"; return 1; }
	done
	echo "20 users brought up concurrently through the daemon, each answered with its uid"
	api executors stop "${users[@]}" >/dev/null
}
check "daemon: 20 users brought up concurrently, all answer" daemon_20

# A person lists, starts and stops her own executor, and completes her
# own name; other people's stay root's and the admins'.
daemon_own_executor() {
	local out a b
	api executors start alice bob >/dev/null
	out=$(as alice agorctl executors)
	echo "$out"
	echo "$out" | grep '^alice ' >/dev/null
	if echo "$out" | grep '^bob ' >/dev/null; then echo "alice lists bob's executor"; return 1; fi
	a=$(as alice agorctl executors start alice)
	sleep 0.1
	b=$(as alice agorctl executors start alice)
	echo "$a"
	echo "$b"
	[ "${a##*answered at }" != "${b##*answered at }" ] || { echo "the same ping twice"; return 1; }
	if out=$(as alice agorctl executors stop bob 2>&1); then echo "alice stopped bob's executor: $out"; return 1; fi
	echo "alice stopping bob's: $out"
	echo "$out" | grep not_yourself >/dev/null
	want "$(systemctl is-active agor-executor@bob.service)" active
	want "$(as alice agorctl executors stop alice)" "alice: stopped"
	want "$(systemctl is-active agor-executor@alice.socket agor-executor@alice.service | tr '\n' ' ')" "inactive inactive "
	out=$(as alice agorctl __complete executors stop '')
	echo "$out" | grep -x alice >/dev/null || { echo "alice's own name not completed: $out"; return 1; }
	if echo "$out" | grep -x bob >/dev/null; then echo "bob's name completed for alice"; return 1; fi
	want "$(as alice agorctl exec alice -- id -un)" alice
	echo "alice listed, pinged afresh and stopped her own executor, completed her name; the next use started it again"
}
check "a person lists her own executor, starts it (a fresh ping each time), stops it and completes her name; not bob's" daemon_own_executor

daemon_audit() {
	local out
	# A start this daemon saw: agorctl audit answers from the running
	# daemon's window, and alice's executor outlived the last restart.
	api executors stop alice >/dev/null
	api executors start alice >/dev/null
	out=$(api audit --action executor_started --user alice)
	echo "$out" | sed -n 1,2p
	echo "$out" | grep '"user":"alice"' >/dev/null
	out=$(journalctl -u agor-daemon.service AGOR_AUDIT_ACTION=executor_started AGOR_USER=alice -o cat --no-pager)
	test -n "$out"
	echo "journal: $(echo "$out" | wc -l) entries with AGOR_AUDIT_ACTION=executor_started AGOR_USER=alice"
	out=$(as alice agorctl audit)
	test -n "$out"
	if echo "$out" | grep -v '"user":"alice"'; then echo "alice saw others' records"; return 1; fi
	echo "audit trail in agorctl audit and the journal; alice sees only her own"
}
check "audit trail: executor starts in agorctl audit and journalctl AGOR_AUDIT_ACTION=; users see their own" daemon_audit

# audit_count USER ACTION: how many ACTION records the audit trail holds for USER.
audit_count() { api audit --user "$1" --action "$2" --limit 0 | grep -c . || true; }

daemon_audit_counts() {
	local u=audrey i starts=3 got
	id "$u" >/dev/null 2>&1 || useradd --create-home --groups agorusers "$u"
	want "$(audit_count $u executor_stopped)" 0
	for i in $(seq $starts); do
		api executors start $u >/dev/null
		# STATUS= changes while it serves: each is a PropertiesChanged with ActiveState=active
		for _ in 1 2 3; do api exec $u -- true; done
		api executors stop $u >/dev/null
		for _ in $(seq 50); do [ "$(audit_count $u executor_stopped)" -ge "$i" ] && break; sleep 0.1; done
	done
	sleep 1.5 # a signal late by a second would still count
	got="$(audit_count $u executor_started) started, $(audit_count $u executor_stopped) stopped"
	echo "$starts real starts and stops of $u's executor: audit trail $got"
	want "$got" "$starts started, $starts stopped"
	# The first start or stop is a start. (--limit 1 is the newest record:
	# it once stood here as "the first", and showed the last stop.)
	local first
	first=$(api audit --user $u --limit 0 | grep -E '"action":"executor_(started|stopped)"' | head -n1)
	echo "$u's first records: $(api audit --user $u --limit 0 | head -n3 | grep -o '"action":"[a-z_]*"' | paste -sd' ')"
	grep -q '"action":"executor_started"' <<<"$first" || { echo "the first start or stop is not a start: $first"; return 1; }
}
check "audit trail: N real starts and stops of an executor give N executor_started and N executor_stopped, none before the first start" daemon_audit_counts

# journalctl's plain output (the message alone) says what happened: the
# method, whom it served, the outcome; who connected.
daemon_journal_plain() {
	local t0 out
	t0=$(date +%s)
	api exec alice -- sh -c 'exit 4' >/dev/null 2>&1 || true
	sleep 0.5
	out=$(journalctl -u agor-executor@alice.service --since "@$t0" -o cat --no-pager)
	echo "$out" | grep -E '^exec for alice: exit status 4 in [0-9]+ ms$' ||
		{ echo "no plain exec line:"; echo "$out"; return 1; }
	journalctl -u agor-executor@alice.service -o cat --no-pager |
		grep -E "^connection from uid $(id -u agor) \(pid [0-9]+\) accepted: serving alice$" | tail -n 1 | grep . ||
		{ echo "no plain connection line"; return 1; }
	if journalctl -u agor-executor@alice.service -o cat --no-pager | grep -x -E 'request|connection accepted|connection closed'; then
		echo "bare lines remain"; return 1
	fi
}
check "the executor's journal lines say what happened in the message itself (exec for alice: exit status 4; connection from uid agor accepted)" daemon_journal_plain
