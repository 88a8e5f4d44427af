# Sourced by test/slurm/run.sh: the containers of the Slurm suite. Each node
# is a systemd-nspawn machine booted from one cached root filesystem into its
# own tmpfs, joined to a private bridge (--network-zone) with a static
# address written before boot, sharing /home (as a cluster shares it over
# NFS). Needs $work and $top. inside NODE CMD... runs CMD in NODE as root.

cluster_nodes="login node1 node2"
cluster_zone=agorslurm           # the bridge is vz-agorslurm
cluster_net=10.213.0             # a private /24 on that bridge only
declare -A cluster_addr=([login]=10 [node1]=11 [node2]=12)
declare -A cluster_pid=() cluster_leader=()

cluster_unpack() { # NODE TARBALL
	mkdir -p "$work/$1"
	mount -t tmpfs -o size=2G tmpfs "$work/$1"
	tar -C "$work/$1" --zstd -xf "$2"
}

# cluster_configure NODE: hostname, address, hosts, munge, slurm, directory.
cluster_configure() {
	local n=$1 root=$work/$1
	echo "$n" >"$root/etc/hostname"
	{
		echo "127.0.0.1 localhost"
		for m in $cluster_nodes; do echo "$cluster_net.${cluster_addr[$m]} $m"; done
	} >"$root/etc/hosts"
	mkdir -p "$root/etc/systemd/network"
	cat >"$root/etc/systemd/network/80-agor.network" <<-NET
		[Match]
		Name=host0
		[Network]
		Address=$cluster_net.${cluster_addr[$n]}/24
		LinkLocalAddressing=no
		IPv6AcceptRA=no
	NET
	systemctl --root="$root" enable systemd-networkd.service >/dev/null 2>&1
	systemctl --root="$root" mask console-getty.service apt-daily.timer apt-daily-upgrade.timer \
		systemd-networkd-wait-online.service e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true
	install -m 0400 "$munge_key" "$root/etc/munge/munge.key"
	chroot "$root" chown munge:munge /etc/munge/munge.key
	cluster_slurm_conf >"$root/etc/slurm/slurm.conf"
	printf 'CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n' >"$root/etc/slurm/cgroup.conf"
	# Every node trusts the dial-back CA; the nodes get the executor (the
	# login host gets it from the .deb) and the agents' settings: the
	# stand-in model serves on the login host.
	mkdir -p "$root/etc/agor" "$root/opt/agents"
	cp "$work/pki/ca.pem" "$root/etc/agor/dialback-ca.pem"
	cat >"$work/agents.yaml" <<-YAML
		claude-code:
		  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
		  env:
		    ANTHROPIC_BASE_URL: http://$cluster_net.${cluster_addr[login]}:18080
		    CLAUDE_CODE_MAX_RETRIES: "0"
	YAML
	if [ "$n" != login ]; then # the login host's come with the .deb (install.sh)
		install -D -m 0755 "$work/opt/agor-executor" "$root/usr/libexec/agor/agor-executor"
		cp "$work/agents.yaml" "$root/etc/agor/agents.yaml"
	fi
	if [ "$n" = login ]; then
		systemctl --root="$root" disable slurmd.service >/dev/null 2>&1 || true
		systemctl --root="$root" enable slurmctld.service >/dev/null 2>&1
		test/systemd/directory/setup.sh "$root" test/slurm/people.ldif
		sed -i 's|^uri .*|uri ldap://127.0.0.1/|' "$root/etc/nslcd.conf"
	else
		systemctl --root="$root" disable slurmctld.service slapd.service >/dev/null 2>&1 || true
		systemctl --root="$root" enable slurmd.service >/dev/null 2>&1
		printf 'uid nslcd\ngid nslcd\nuri ldap://%s/\nbase dc=agor,dc=test\n' "$cluster_net.${cluster_addr[login]}" >"$root/etc/nslcd.conf"
		chmod 640 "$root/etc/nslcd.conf"
		chroot "$root" chown root:nslcd /etc/nslcd.conf
		sed -i -E 's/^(passwd|group):.*/\1: files ldap/' "$root/etc/nsswitch.conf"
	fi
}

# The settings SCALE-OUT.md found these hosts need (hybrid cgroup hierarchy,
# no accounting database), and no job delay so a prompt waits no longer
# than it must.
cluster_slurm_conf() {
	cat <<-CONF
		ClusterName=agortest
		SlurmctldHost=login($cluster_net.${cluster_addr[login]})
		SlurmUser=slurm
		AuthType=auth/munge
		StateSaveLocation=/var/lib/slurm/slurmctld
		SlurmdSpoolDir=/var/lib/slurm/slurmd
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		AccountingStorageType=accounting_storage/none
		JobCompType=jobcomp/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SchedulerParameters=batch_sched_delay=0
		DisableRootJobs=YES
		ReturnToService=2
		MinJobAge=600
		KillWait=5
		NodeName=node1 NodeAddr=$cluster_net.${cluster_addr[node1]} CPUs=2 RealMemory=1000 State=UNKNOWN
		NodeName=node2 NodeAddr=$cluster_net.${cluster_addr[node2]} CPUs=2 RealMemory=1000 State=UNKNOWN
		PartitionName=main Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP
	CONF
}

# cluster_boot NODE: systemd-nspawn in its own cgroup (as run.sh of the
# real-systemd suite does), on the zone's bridge, /home shared.
cluster_boot() {
	local n=$1 cg=agor-slurm-$$-$1
	(
		join_cgroup "$cg" "$BASHPID"
		exec systemd-nspawn --quiet -D "$work/$n" -M "agor-$n" --boot \
			--system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self' \
			--register=no --keep-unit --network-zone="$cluster_zone" --console=read-only \
			--bind="$work/home:/home" --bind-ro="$work/opt:/opt/tests" \
			--bind-ro="$top/test/.cache/agents/claude-code:/opt/agents/claude-code" </dev/null >"$work/boot-$n.log" 2>&1
	) &
	cluster_pid[$n]=$!
	local leader=
	for _ in $(seq 100); do
		leader=$(ps -o pid= --ppid "${cluster_pid[$n]}" | head -n1 | tr -d ' ' || true)
		[ -n "$leader" ] && [ "$(readlink "/proc/$leader/exe" 2>/dev/null)" = /usr/lib/systemd/systemd ] && break
		leader=
		sleep 0.1
	done
	[ -n "$leader" ] || { echo "$n did not start:"; cat "$work/boot-$n.log"; return 1; }
	cluster_leader[$n]=$leader
	echo "$leader" >"$work/leader-$n"
}

# The host end of the zone: nspawn makes the bridge and the veths, and
# (no systemd-networkd on the host) leaves them down.
cluster_network_up() {
	for _ in $(seq 50); do ip link show "vz-$cluster_zone" >/dev/null 2>&1 && break; sleep 0.1; done
	ip link set "vz-$cluster_zone" up
	for l in $(ip -o link show master "vz-$cluster_zone" | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link set "$l" up
	done
}

# inside reads the leader from a file, so that checks' `bash -c` sees it.
inside() { # NODE CMD...
	local n=$1; shift
	nsenter -t "$(cat "$work/leader-$n")" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}

cluster_wait() {
	local state
	state=$(inside "$1" timeout 60 systemctl is-system-running --wait || true)
	if [ "$state" != running ] && [ "$state" != degraded ]; then
		echo "$1: system state $state"; inside "$1" systemctl --failed --no-pager || true
		return 1
	fi
	[ "$state" = running ] || inside "$1" systemctl --failed --no-pager --plain || true
}

# Both nodes idle in the controller's view.
cluster_wait_slurm() {
	for _ in $(seq 100); do
		[ "$(inside login sinfo -h -N -o %T 2>/dev/null | grep -c '^idle')" = 2 ] && return 0
		sleep 0.2
	done
	inside login sinfo -N || true
	for n in node1 node2; do inside "$n" journalctl -u slurmd --no-pager -n 20 || true; done
	return 1
}

cluster_teardown() {
	set +e
	for n in $cluster_nodes; do
		[ -n "${cluster_leader[$n]:-}" ] && [ -d "/proc/${cluster_leader[$n]}" ] &&
			nsenter -t "${cluster_leader[$n]}" -a systemctl poweroff --no-block >/dev/null 2>&1
	done
	for n in $cluster_nodes; do
		local p=${cluster_pid[$n]:-}
		[ -n "$p" ] || continue
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		# A container whose shutdown hangs (a slurmstepd that will not
		# go) outlives nspawn: its init goes, and its namespaces with it.
		kill -9 "${cluster_leader[$n]:-0}" 2>/dev/null
	done
	for n in $cluster_nodes; do
		leave_cgroup "agor-slurm-$$-$n"
		umount "$work/$n" 2>/dev/null
	done
	ip link del "vz-$cluster_zone" 2>/dev/null
	rm -rf "$work"
}
