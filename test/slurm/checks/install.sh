# The project's .deb on the login host, configured for the slurm backend:
# the dial-back listener on the bridge with the suite's certificate.
install_login() {
	inside login dpkg -i /opt/tests/agor_0.1.1-1_amd64.deb >/dev/null || return 1
	inside login sh -c 'cat >/etc/agor/agents.yaml' <"$work/agents.yaml"
	inside login install -m 0644 /opt/tests/dialback.pem /etc/agor/dialback.pem
	inside login install -m 0640 -g agor /opt/tests/dialback.key /etc/agor/dialback.key
	inside login sh -c 'cat >/etc/agor/config.yaml' <<-YAML
		execution:
		  backend: slurm
		  allowed_groups: [slurmagents]
		  idle_timeout_ms: 20000
		  connection_timeout_ms: 30000
		slurm:
		  listen: 10.213.0.10:7443
		  tls_cert: /etc/agor/dialback.pem
		  tls_key: /etc/agor/dialback.key
		  poll_interval_ms: 500
		  reconnect_s: 60
		  job: {cpus: 1, memory: 200M}
		  time_limit_notice_s: 150
		  output: /home/%u/.agor-executor-%j.log   # shared homes: the checks read it
		  users:
		    bob: {time_limit: "3"}   # minutes: told within 30 s (Slurm signals up to 60 s early)
	YAML
	inside login systemctl restart agor-daemon
	inside login systemctl is-active agor-daemon
}
check "the .deb installs on the login host; the daemon serves the slurm backend" install_login
check "the daemon listens for dial-backs on the bridge" want '10\.213\.0\.10:7443' inside login ss -Htln
doctor_slurm() {
	local out
	out=$(inside login agorctl doctor --user alice 2>&1)
	echo "$out" | grep slurm-
	for c in slurm-commands slurm-tls slurm-test-job; do
		echo "$out" | grep -E "^ok +$c " >/dev/null || return 1
	done
}
check "agorctl doctor: Slurm commands, the dial-back's TLS, a test job on a node" doctor_slurm
