# Installing the .deb: the account, directories, units verified, the exposure
# score (at or below 2.5: the task sandbox's namespaces cost a little, docs/security.md). Sourced by checks.sh (uses lib.sh).

install_pkg() {
	dpkg -i $T/agor_0.1.0-1_amd64.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	id agor
	want "$(stat -c '%U:%G %a' /run/agor/executors)" "root:agor 750"
	want "$(stat -c '%U:%G %a' /var/lib/agor)" "agor:agor 750"
	test -f /usr/share/polkit-1/rules.d/50-agor.rules
}
check "dpkg -i installs, creates the agor user and directories" install_pkg

verify_units() {
	# --man=no: the container has no man(1); the pages are checked below.
	systemd-analyze verify --man=no agor-executor@alice.socket agor-executor@alice.service agor-executors.slice \
		agor-daemon.service agor-daemon.socket
	test -f /usr/share/man/man8/agor-executor.8.gz
	test -f /usr/share/man/man8/agor-daemon.8.gz
	test -f /usr/share/man/man1/agorctl.1.gz
}
check "systemd-analyze verify: every unit" verify_units

security_score() {
	local score
	score=$(systemd-analyze security agor-executor@alice.service --no-pager | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
	echo "exposure score of agor-executor@alice.service: $score (target <= ${AGOR_EXPOSURE_TARGET:-2.5})"
	awk -v s="$score" -v t="${AGOR_EXPOSURE_TARGET:-2.5}" 'BEGIN { exit !(s != "" && s <= t) }'
}
check "executor exposure score at or below target" security_score
