# The package lifecycle: upgrade over itself, remove, purge, lint. Sourced by checks.sh (uses lib.sh).

# The package upgraded with apt under the acceptance's scene (together in
# prompt.sh: alice's prompt in an 8 s command, bob's terminal attached,
# carol's question open): the postinst restarts the daemon, the executors
# run on (same pids, their old binary) and the next daemon takes their
# tasks over.
upgrade() {
	local before t0
	setup_agents
	agorctl executors start alice >/dev/null
	before=$(systemctl show -p MainPID --value agor-executor@alice.service)
	t0=$(date +%s)
	together_as_allowed apt
	want "$(dpkg-query -W -f '${Version}' agor)" 0.1.1-1
	want "$(systemctl is-active agor-executor@alice.socket)" active
	want "$(systemctl show -p MainPID --value agor-executor@alice.service)" "$before"
	ping_as agor alice >/dev/null
	echo "apt-get install of 0.1.1-1: alice's executor (pid $before) ran on"
	# What her gateway relay did while the socket was restarted (upstream.go).
	echo "her gateway relay: $(journalctl -u agor-executor@alice.service --since "@$t0" -o cat --no-pager |
		grep -cE "socket is back|dialling again" || true) connection(s) waited for the daemon's socket or were sent again"
}
check "upgrade with apt under alice's prompt, bob's terminal and carol's question: same package, higher version; all complete" upgrade
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
	test ! -e /etc/agor/config.d # the drop-ins are configuration
	# What agorctl environments add made, if the environments concern ran.
	test ! -e /etc/agor/environments
	[ -z "$(ls -d /etc/systemd/system/agor-env-* 2>/dev/null)" ] || { ls -d /etc/systemd/system/agor-env-*; return 1; }
	no_units 'agor*'
	echo "purged: conffiles, drop-ins, the master key, /var/lib/agor and environments gone; no agor unit loaded (slices included)"
}
check "purge removes configuration and state" purge

lint() {
	cat $T/lint.txt
	! grep -qE '^(E|W):|^agor.*: (E|W):' $T/lint.txt
}
check "lintian and rpmlint clean (overrides in-tree); rpm -qpl and --scripts" lint
