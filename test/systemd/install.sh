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

# Secure by default: the packaged configuration confines an agent's
# prompt that names no level to its --cwd (sandbox.prompts: workspace),
# so one at the home is refused naming --cwd before anything runs; the
# person's own exec is hers (sandbox.default: off). Later concerns start
# from the base configuration (lib.sh's base_config: this packaged file
# untouched, plus the suite's drop-in), a targeted run too.
secure_default() {
	local out rc=0
	grep -q '^  prompts: workspace' /etc/agor/config.yaml || { echo "the packaged config.yaml names no prompts: workspace"; rc=1; }
	# The package owns the drop-ins' place, and ships none in it.
	dpkg -S /etc/agor/config.d >/dev/null || { echo "no package owns /etc/agor/config.d"; rc=1; }
	[ -z "$(ls -A /etc/agor/config.d 2>&1)" ] || { echo "/etc/agor/config.d is not an empty directory: $(ls -A /etc/agor/config.d 2>&1)"; rc=1; }
	out=$(as alice agorctl prompt alice 'hello' 2>&1 </dev/null) && { echo "a prompt at the home was served: $out"; rc=1; }
	echo "a prompt with no --cwd: $(tail -n 1 <<<"$out" | cut -c1-200)"
	grep -q -- '--cwd' <<<"$out" || rc=1
	as alice agorctl exec alice -- touch /home/alice/own-exec.txt </dev/null || rc=1
	want "$(stat -c %U /home/alice/own-exec.txt 2>&1)" alice || rc=1
	rm -f /home/alice/own-exec.txt
	base_config
	restart_daemon
	return $rc
}
check "secure by default: the packaged sandbox.prompts confines a prompt to its --cwd (one at the home is refused naming --cwd); the person's own exec is not confined" secure_default
