# The package lifecycle: upgrade over itself, remove, purge, lint. Sourced by checks.sh (uses lib.sh).

# The package upgraded with apt under alice's running prompt (an 8 s
# command): the postinst restarts the daemon, her executor runs on (same
# pid, its old binary) and the next daemon takes her task over; her
# agorctl prompt ends completed.
upgrade() {
	local before client
	setup_agents
	start_model -bash 'sleep 8; echo upgraded-under-me > under-upgrade.txt' -text 'done'
	rm -f /home/alice/under-upgrade.txt
	as alice agorctl prompt alice 'work through the upgrade' --mode bypassPermissions >/tmp/upg.out 2>&1 </dev/null &
	client=$!
	for _ in $(seq 100); do grep -q 'Bash' /tmp/upg.out && break; sleep 0.2; done
	grep -q 'Bash' /tmp/upg.out || { echo "the tool call never came"; cat /tmp/upg.out; return 1; }
	before=$(systemctl show -p MainPID --value agor-executor@alice.service)
	apt-get install -y "$T/agor_0.1.1-1_amd64.deb" >/tmp/apt.log 2>&1 </dev/null || { cat /tmp/apt.log; return 1; }
	want "$(dpkg-query -W -f '${Version}' agor)" 0.1.1-1
	want "$(systemctl is-active agor-executor@alice.socket)" active
	want "$(systemctl show -p MainPID --value agor-executor@alice.service)" "$before"
	wait "$client" || { echo "agorctl prompt did not end completed:"; cat /tmp/upg.out; return 1; }
	grep '^completed' /tmp/upg.out >/dev/null
	want "$(cat /home/alice/under-upgrade.txt)" upgraded-under-me
	ping_as agor alice >/dev/null
	echo "apt-get install of 0.1.1-1 under alice's running prompt: her executor (pid $before) ran on, the restarted daemon took the task over, the prompt completed"
}
check "upgrade with apt under a running prompt: same package, higher version, over itself; the prompt completes" upgrade
remove() {
	dpkg -r agor >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	want "$(systemctl is-active agor-executor@alice.socket agor-executor@alice.service agor-executor@bob.socket | sort -u | tr '\n' ' ')" "inactive "
	test ! -e /usr/libexec/agor/agor-executor
	test ! -e /usr/lib/systemd/system/agor-executor@.service
	test -f /etc/agor/executor.env # a conffile stays until purge
	want "$(systemctl is-active agor-daemon.service agor-daemon.socket | sort -u | tr '\n' ' ')" "inactive "
	want "$(systemctl is-active agor-executors.slice agor.slice | sort -u | tr '\n' ' ')" "inactive "
	id agor >/dev/null
	echo "removed: executors and their slices stopped, files gone, conffile and agor account kept"
}
check "remove stops every executor and removes the files" remove
purge() {
	dpkg -P agor >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	test ! -e /etc/agor/executor.env
	test ! -e /var/lib/agor
	test ! -e /etc/agor/master.key
	no_units 'agor*'
	echo "purged: conffiles, the master key and /var/lib/agor gone; no agor unit loaded (slices included)"
}
check "purge removes configuration and state" purge

lint() {
	cat $T/lint.txt
	! grep -qE '^(E|W):|^agor.*: (E|W):' $T/lint.txt
}
check "lintian and rpmlint clean (overrides in-tree); rpm -qpl and --scripts" lint
