#!/usr/bin/env bash
# The suites' root filesystems, each built once with mmdebstrap and cached
# in test/.cache by release and package list. Sourced by the suites'
# harnesses (test/systemd/run.sh, test/slurm/run.sh), which call
# image_rootfs, image_envroot or image_slurm for the one they boot. Run as
# a command, `test/images.sh [--slurm] [RELEASE...]` builds the real-systemd
# suite's images for each RELEASE (and with --slurm the Slurm suite's), so
# that they are made while other work runs: .ci/run starts it beside
# `make test`, run.sh beside the packages.
# Each build holds a lock on its tarball, so a harness asking for an image
# a background build is making waits for it instead of making it again.
# Root (mmdebstrap, and the lock's directory).

images_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
images_cache=$images_top/test/.cache

# The real-systemd suite's container: systemd, D-Bus, polkit, a directory
# (slapd, nslcd, systemd-userdbd), the egress checks' clients (iproute2,
# curl, git, pip), acl for the sandbox checks, and Cockpit with Debian's
# Chromium for agor's page (cockpit.sh drives it from inside).
images_rootfs_pkgs="systemd,systemd-sysv,dbus,polkitd,pkexec,libpam-systemd,python3-minimal,util-linux,tmux,less,slapd,ldap-utils,nslcd,libnss-ldapd,systemd-userdbd,iproute2,curl,git,python3-pip,acl"
images_rootfs_pkgs="$images_rootfs_pkgs,cockpit-ws,cockpit-bridge,cockpit-system,chromium,fonts-dejavu-core"
# The environments concern's image: another release's minbase with
# python3 (so that its Python differs from the container's), and git and
# acl for the escapes tried inside it.
images_env_pkgs="python3-minimal,git,acl"
# The Slurm suite's login host and nodes (Debian 12 only: docs/testing.md).
images_slurm_pkgs="systemd,systemd-sysv,dbus,polkitd,pkexec,libpam-systemd,python3-minimal,util-linux,procps,iproute2,less,tmux,openssl,slapd,ldap-utils,nslcd,libnss-ldapd,munge,slurmctld,slurmd,slurm-client"

# images_build TARBALL RELEASE PKGS MMDEBSTRAP-FLAGS...: TARBALL, unless it
# is there already; made under its lock.
images_build() {
	local tarball=$1 release=$2 pkgs=$3 tmp
	shift 3
	# mmdebstrap picks the tarball's compression by its name's ending.
	tmp=${tarball%.tar.*}.tmp.tar.${tarball##*.tar.}
	mkdir -p "$images_cache"
	(
		flock 9
		[ -s "$tarball" ] && exit 0
		echo "== building ${tarball##*/} ($release: $pkgs)"
		rm -f "$tmp"
		mmdebstrap --quiet --variant=minbase "$@" --include="$pkgs" "$release" "$tmp"
		mv "$tmp" "$tarball"
	) 9>"$tarball.lock"
}

images_key() { printf '%s\n' "$*" | sha256sum | cut -c1-12; }

# image_rootfs RELEASE: the real-systemd suite's root; prints its path.
image_rootfs() {
	local t=$images_cache/rootfs-$(images_key "$images_rootfs_pkgs" "$1").tar.zst
	images_build "$t" "$1" "$images_rootfs_pkgs" >&2 && echo "$t"
}

# image_envroot RELEASE: the environment's root for a container of
# RELEASE: the other release's, as .tar.gz (gzip is in every minbase, the
# container has no zstd), without device nodes (MountAPIVFS= gives the
# unit its /dev); prints its path.
image_envroot() {
	local other=bookworm t
	[ "$1" != bookworm ] || other=trixie
	t=$images_cache/envroot-$(images_key env "$images_env_pkgs" "$other").tar.gz
	images_build "$t" "$other" "$images_env_pkgs" --skip=output/dev >&2 && echo "$t"
}

# image_slurm: the Slurm suite's root (bookworm); prints its path.
image_slurm() {
	local t=$images_cache/slurm-rootfs-$(images_key "$images_slurm_pkgs" bookworm).tar.zst
	images_build "$t" bookworm "$images_slurm_pkgs" >&2 && echo "$t"
}

# As a command: every image, in the order the suites boot them.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	. "$images_top/test/timing.sh"
	. "$images_top/test/nspawn.sh"
	slurm=
	[ "${1:-}" != --slurm ] || { slurm=1; shift; }
	host_tools mmdebstrap:mmdebstrap zstd:zstd
	for r in ${*:-bookworm trixie}; do
		phase "root filesystem $r" image_rootfs "$r" >/dev/null
		phase "environment root for $r" image_envroot "$r" >/dev/null
	done
	[ -z "$slurm" ] || phase "slurm root filesystem" image_slurm >/dev/null
fi
