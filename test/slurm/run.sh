#!/usr/bin/env bash
# The Slurm suite behind `make test-slurm`: a cluster harness. It boots a
# login host and two compute nodes (Debian bookworm, systemd as PID 1) in
# systemd-nspawn on a private bridge it creates, with one directory for all
# (the real-systemd suite's OpenLDAP, served by the login host), one munge
# key, shared home directories, slurmctld on the login host and slurmd on
# the nodes; installs the project's .deb on the login host and the executor
# binary on the nodes; then runs checks.sh on the host, which runs one file
# per concern (checks/*.sh). Always tears down. Root.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
[ "$(id -u)" = 0 ] || { echo "test-slurm: run as root (it boots containers)" >&2; exit 1; }
start=$(date +%s)
. test/slurm/cluster.sh
# Each step's time goes to $AGOR_TIMES (test/timing.sh).
. test/timing.sh

# --- host tools and what goes into the containers ------------------------------
. test/nspawn.sh
phase "host tools" host_tools systemd-nspawn:systemd-container mmdebstrap:mmdebstrap zstd:zstd openssl:openssl
echo "== building the package"
phase package make -s deb PKG_VERSION=0.1.1 >/dev/null
mkdir -p test/.cache
work=$(mktemp -d /tmp/agor-slurm.XXXXXX)
mkdir -p "$work/opt" "$work/home"
cp dist/agor_0.1.1-1_amd64.deb bin/agor-executor "$work/opt/"
CGO_ENABLED=0 go build -o "$work/opt/demomodel" ./test/demomodel
CGO_ENABLED=0 go build -o "$work/opt/dialbench" ./test/slurm/dialbench
# The real Claude Code CLI, mounted on every node (make test installs it).
./test/agents.sh claude-code >/dev/null
# The dial-back's certificates: a CA every node trusts (and nothing else),
# and the login host's certificate for its address on the bridge.
pki=$work/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=agor-suite-CA \
	-keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=login -keyout "$pki/dialback.key" -out "$pki/dialback.csr" 2>/dev/null
printf 'subjectAltName=DNS:login,IP:10.213.0.10\nextendedKeyUsage=serverAuth\n' >"$pki/ext"
openssl x509 -req -in "$pki/dialback.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
	-extfile "$pki/ext" -out "$pki/dialback.pem" 2>/dev/null
cp "$pki/ca.pem" "$pki/dialback.pem" "$pki/dialback.key" "$work/opt/"
# Shared home directories, as a cluster's NFS /home: the directory's
# people own theirs on every node.
for u in alice:20101 bob:20102; do
	install -d -m 0750 -o "${u#*:}" -g "${u#*:}" "$work/home/${u%%:*}"
done

# --- root filesystem, cached by package list (test/images.sh) ------------------
. test/images.sh
phase "root filesystem" image_slurm >"$work/tarball"
tarball=$(cat "$work/tarball")

trap cluster_teardown EXIT

# --- the cluster -----------------------------------------------------------------
echo "== preparing login, node1, node2"
munge_key=$work/munge.key
head -c 1024 /dev/urandom >"$munge_key"
cluster_up() {
	for n in $cluster_nodes; do
		cluster_unpack "$n" "$tarball"
		cluster_configure "$n"
	done
	echo "== booting the cluster"
	for n in $cluster_nodes; do cluster_boot "$n"; done
	cluster_network_up
	for n in $cluster_nodes; do cluster_wait "$n"; done
	cluster_wait_slurm
}
phase "cluster up" cluster_up
echo "== cluster ready in $(($(date +%s) - start)) s"

# --- checks ------------------------------------------------------------------------
rc=0
slurm_checks() { ( . test/slurm/checks.sh ); }
phase checks slurm_checks || rc=$?
echo "== slurm suite finished in $(($(date +%s) - start)) s"
exit "$rc"
