#!/usr/bin/env bash
# The real-systemd suite behind `make test-systemd`: the container harness.
# It boots Debian bookworm with systemd as PID 1 (plus D-Bus, polkitd,
# journald, and a directory: OpenLDAP, nslcd, systemd-userdbd) in
# systemd-nspawn and runs checks.sh inside, which installs the project's
# .deb with dpkg and runs one file per concern. Always tears down. Root.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
[ "$(id -u)" = 0 ] || { echo "test-systemd: run as root (it boots a container)" >&2; exit 1; }
start=$(date +%s)

# --- host tools -------------------------------------------------------------
. test/nspawn.sh
host_tools systemd-nspawn:systemd-container mmdebstrap:mmdebstrap zstd:zstd lintian:lintian rpmlint:rpmlint rpm:rpm

# --- packages -----------------------------------------------------------------
echo "== building packages"
make -s deb rpm PKG_VERSION=0.1.1 >/dev/null
cp dist/agor_0.1.1-1_amd64.deb dist/agor-0.1.1-1.x86_64.rpm "$top/test/.cache/" 2>/dev/null || { mkdir -p test/.cache; cp dist/agor_0.1.1-1_amd64.deb dist/agor-0.1.1-1.x86_64.rpm test/.cache/; }
make -s deb rpm >/dev/null # the version the README's `make deb` makes
work=$(mktemp -d /tmp/agor-systemd.XXXXXX)
mkdir -p "$work/opt/dist" "$work/root"
cp dist/agor_0.1.0-1_amd64.deb test/.cache/agor_0.1.1-1_amd64.deb "$work/opt/"
# readme.sh follows the README: the package `make deb` made, as its dist/ holds it.
cp "$(ls -t dist/agor_*_amd64.deb | head -n 1)" "$(ls -t dist/agor-cockpit_*_all.deb | head -n 1)" "$work/opt/dist/"
cp README.md "$work/opt/"
# checks.sh runs the concern files (install.sh, socket.sh, ... upgrade.sh)
# with the helpers of lib.sh; this script is the container harness.
cp test/systemd/*.sh "$work/opt/"
# agor's Cockpit page (cockpit.sh): its package, and the browser driver
# with playwright-core from cockpit/node_modules (make deb installed it).
cp dist/agor-cockpit_0.1.0-1_all.deb test/systemd/cockpit-browser.mjs "$work/opt/"
mkdir -p "$work/opt/node_modules" && cp -r cockpit/node_modules/playwright-core "$work/opt/node_modules/"
[ -z "${AGOR_SUITE_ONLY:-}" ] || echo "$AGOR_SUITE_ONLY" >"$work/opt/only"
# The previous releases, for the upgrade checks (upgrade.sh), each built
# once and cached: prev_release REF VERSION NAME puts REF's package,
# made as VERSION, at /opt/tests/NAME.deb and REF at /opt/tests/NAME_ref.
prev_release() {
	local deb=test/.cache/agor_prev-$1.deb dir
	if [ ! -s "$deb" ] && git cat-file -e "$1^{commit}" 2>/dev/null; then
		echo "== building the previous release ($1)"
		dir=$(mktemp -d /tmp/agor-prev.XXXXXX)
		git worktree add --quiet --detach "$dir/src" "$1"
		make -s -C "$dir/src" deb PKG_VERSION="$2" >/dev/null && cp "$dir/src/dist/agor_$2-1_amd64.deb" "$deb"
		git worktree remove --force "$dir/src"
		rm -rf "$dir"
	fi
	[ -s "$deb" ] && cp "$deb" "$work/opt/$3.deb"
	echo "$1" >"$work/opt/$3_ref"
}
# The last release before the store bound records to uids.
prev_release 5d53026 0.0.9 agor_prev
# The first release with the model gateway and its ledger (schema 7).
prev_release 421fcfc 0.1.0 agor_gw
CGO_ENABLED=0 go test -c -o "$work/opt/identity.test" ./internal/identity
CGO_ENABLED=0 go build -o "$work/opt/coldbench" ./test/systemd/coldbench
CGO_ENABLED=0 go build -o "$work/opt/daemonbench" ./test/systemd/daemonbench
CGO_ENABLED=0 go build -o "$work/opt/demomodel" ./test/demomodel
# The four real agent CLIs for the prompt and modes checks (make test
# installs them), and the host's Node.js for gemini, which is a Node.js
# program (the others are native binaries).
./test/agents.sh >/dev/null
node_bin=$(readlink -f "$(command -v node)")
# The host's npm (make test's deps install it), for the egress checks.
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")

# --- lint the packages on the host -------------------------------------------
lint_out=$work/opt/lint.txt
{
	echo "# lintian"; lintian dist/agor_0.1.0-1_amd64.deb 2>&1 | grep -v '^running with root' || true
	echo "# rpmlint"; rpmlint -c packaging/rpmlint.toml dist/agor-0.1.0-1.x86_64.rpm 2>&1 | grep -E '^agor|badness' || true
	echo "# rpm -qpl"; rpm -qpl dist/agor-0.1.0-1.x86_64.rpm
	echo "# rpm -qp --scripts"; rpm -qp --scripts dist/agor-0.1.0-1.x86_64.rpm
} >"$lint_out" 2>&1

# agor-cockpit's, read by cockpit.sh.
{
	echo "# lintian"; lintian dist/agor-cockpit_0.1.0-1_all.deb 2>&1 | grep -v '^running with root' || true
	echo "# rpmlint"; rpmlint -c packaging/rpmlint.toml dist/agor-cockpit-0.1.0-1.noarch.rpm 2>&1 | grep -E '^agor|badness' || true
	echo "# rpm -qpR"; rpm -qpR dist/agor-cockpit-0.1.0-1.noarch.rpm
} >"$work/opt/lint-cockpit.txt" 2>&1

# --- teardown of a booted release, whatever happens --------------------------
cg=agor-test-$$
nspawn_pid=
teardown() {
	set +e
	if [ -n "${leader:-}" ] && [ -d "/proc/$leader" ]; then
		nsenter -t "$leader" -a systemctl poweroff --no-block >/dev/null 2>&1
	fi
	if [ -n "$nspawn_pid" ]; then
		for _ in $(seq 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$nspawn_pid" 2>/dev/null
		wait "$nspawn_pid" 2>/dev/null
	fi
	nspawn_pid= leader=
	leave_cgroup "$cg"
	umount "$work/root" 2>/dev/null
	return 0
}
trap 'teardown; rm -rf "$work"' EXIT


# env_root RELEASE: the environments concern's root (environments.sh), the
# other release's minbase with python3, so that its Python differs from
# the container's, and git and acl for the escapes tried inside it: built
# once, cached by release and package list, as a .tar.gz (gzip is in
# every minbase; the container has no zstd) without device nodes
# (MountAPIVFS= gives the unit its /dev). Also bench.sh's, for the cold
# start in an environment. Sets env_tar; not built when AGOR_SUITE_ONLY
# leaves both concerns out.
env_root() {
	local other=bookworm pkgs=python3-minimal,git,acl key
	env_tar=
	[ "$1" != bookworm ] || other=trixie
	case " ${AGOR_SUITE_ONLY:-environments} " in *" environments "* | *" bench "*) ;; *) return 0 ;; esac
	key=$(printf 'env %s %s\n' "$pkgs" "$other" | sha256sum | cut -c1-12)
	env_tar=test/.cache/envroot-$key.tar.gz
	if [ ! -s "$env_tar" ]; then
		echo "== building the environment's root ($other: $pkgs)"
		mmdebstrap --quiet --variant=minbase --skip=output/dev --include="$pkgs" "$other" "$env_tar.tmp.tar.gz"
		mv "$env_tar.tmp.tar.gz" "$env_tar"
	fi
}

# boot_and_check RELEASE: builds (once, cached by package list and release) and
# unpacks RELEASE's root filesystem, boots it and runs checks.sh inside;
# checks.sh's status goes to checks_rc (a function called in an || list would
# run without errexit, and a failed setup step must end the suite).
boot_and_check() {
	local release=$1 pkgs key tarball root state t0
	t0=$(date +%s)
	echo "== Debian $release"
	# slapd, nslcd and libnss-ldapd: a real directory (test/systemd/directory);
	# systemd-userdbd: the user database the daemon asks over varlink;
	# iproute2, curl, git and pip: the egress checks' private network and clients;
	# acl: the sandbox checks try ACLs outside a workspace.
	pkgs="systemd,systemd-sysv,dbus,polkitd,pkexec,libpam-systemd,python3-minimal,util-linux,tmux,less,slapd,ldap-utils,nslcd,libnss-ldapd,systemd-userdbd,iproute2,curl,git,python3-pip,acl"
	# Cockpit and a browser for agor's page (cockpit.sh). Chromium runs in the
	# container, beside cockpit-ws on its private network, so that the check
	# drives it from inside like every other check (no host browser to reach
	# into the container's namespace).
	pkgs="$pkgs,cockpit-ws,cockpit-bridge,cockpit-system,chromium,fonts-dejavu-core"
	key=$(printf '%s %s\n' "$pkgs" "$release" | sha256sum | cut -c1-12)
	tarball=test/.cache/rootfs-$key.tar.zst
	if [ ! -s "$tarball" ]; then
		echo "== building root filesystem ($pkgs)"
		mmdebstrap --quiet --variant=minbase --include="$pkgs" "$release" "$tarball.tmp.tar.zst"
		mv "$tarball.tmp.tar.zst" "$tarball"
	fi

	env_root "$release"

	echo "== unpacking root filesystem"
	mount -t tmpfs -o size=3G tmpfs "$work/root" # 1 GiB of it the root filesystem, Chromium most of that
	tar -C "$work/root" --zstd -xf "$tarball"
	root=$work/root
	echo agortest >"$root/etc/hostname"
	test/systemd/directory/setup.sh "$root"
	chroot "$root" groupadd agorusers # allowed by the daemon checks' config; carol is not in it
	for u in alice bob carol; do chroot "$root" useradd --create-home --shell /bin/bash "$u"; done
	chroot "$root" usermod -a -G agorusers alice
	chroot "$root" usermod -a -G agorusers bob
	# 20 users for the concurrency checks, 100 for the daemon's memory benchmark.
	for u in $(seq -f 'user%02g' 1 20) $(seq -f 'u%03g' 1 100); do
		chroot "$root" useradd --create-home --groups agorusers "$u"
	done
	# The journal lives on this tmpfs, where journald's defaults would keep
	# 15% of it free (450 MiB) by deleting old entries once Chromium, the
	# agents and the checks' files fill it: lines the checks read back
	# would vanish mid-run. Split by uid, the 120 accounts' journal files
	# (8 MiB each at least) took 1.1 GiB for 2 MiB of messages: one file,
	# and a fixed allowance, keep the whole run's journal.
	mkdir -p "$root/etc/systemd/journald.conf.d"
	printf '[Journal]\nSplitMode=none\nSystemMaxUse=1G\nSystemKeepFree=64M\nSystemMaxFileSize=256M\n' >"$root/etc/systemd/journald.conf.d/suite.conf"
	systemctl --root="$root" mask console-getty.service apt-daily.timer apt-daily-upgrade.timer \
		systemd-networkd-wait-online.service e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true

	# --- boot ---------------------------------------------------------------------
	echo "== booting systemd in systemd-nspawn"
	(
		join_cgroup "$cg" "$BASHPID"
		# nspawn's own seccomp filter (systemd 252) leaves out the landlock
		# system calls, which the executor's task sandbox needs: let them in,
		# as a host does (the executor unit's filter still has its say).
		SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 exec systemd-nspawn --quiet -D "$root" -M agortest --boot \
			--system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self open_tree move_mount mount_setattr' \
			--register=no --keep-unit --private-network --console=read-only \
			--bind-ro="$work/opt:/opt/tests" --bind-ro="$top/test/.cache/agents:/opt/agents" --bind-ro="$node_bin:/opt/node/node" --bind-ro="$npm_dir:/opt/npm" ${env_tar:+--bind-ro="$top/$env_tar:/opt/envroot.tar.gz"} </dev/null >"$work/boot.log" 2>&1
	) &
	nspawn_pid=$!
	leader=
	for _ in $(seq 100); do
		leader=$(ps -o pid= --ppid "$nspawn_pid" | head -n1 | tr -d ' ' || true)
		[ -n "$leader" ] && [ "$(readlink "/proc/$leader/exe" 2>/dev/null)" = /usr/lib/systemd/systemd ] && break
		leader=
		sleep 0.1
	done
	[ -n "$leader" ] || { echo "container did not start:"; cat "$work/boot.log"; exit 1; }
	for _ in $(seq 100); do [ -S "/proc/$leader/root/run/systemd/private" ] && break; sleep 0.1; done
	inside() { nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
	state=$(inside timeout 60 systemctl is-system-running --wait || true)
	echo "== system state: $state"
	if [ "$state" != running ] && [ "$state" != degraded ]; then
		inside systemctl --failed --no-pager || true
		exit 1
	fi
	[ "$state" = running ] || inside systemctl --failed --no-pager --plain || true

	inside sh -c '. /etc/os-release; echo "== booted $PRETTY_NAME, systemd $(systemctl --version | sed -n "1s/^systemd \\([0-9]*\\).*/\\1/p")"'
	checks_rc=0
	inside bash /opt/tests/checks.sh || checks_rc=$?
	# The Cockpit check's screenshots, out of the container before teardown.
	if [ -d "$root/var/log/agor-suite/cockpit" ]; then
		rm -rf "test/.logs/cockpit-$release" && mkdir -p test/.logs && cp -r "$root/var/log/agor-suite/cockpit" "test/.logs/cockpit-$release"
		echo "== screenshots: $top/test/.logs/cockpit-$release/"
	fi
	echo "== Debian $release: checks took $(( $(date +%s) - t0 )) s"
	teardown
}

# --- checks, one release after another --------------------------------------------
releases=${*:-bookworm trixie}
rc=0 failed=
for release in $releases; do
	boot_and_check "$release"
	[ "$checks_rc" = 0 ] || { rc=1; failed="$failed $release"; }
done
echo "== suite took $(( $(date +%s) - start )) s${failed:+; failed on:$failed}"
exit $rc
