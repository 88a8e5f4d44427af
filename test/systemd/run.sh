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
releases=${*:-bookworm trixie}
# Each step's time goes to $AGOR_TIMES (test/timing.sh), under .ci/run's
# name for this suite.
. test/timing.sh
. test/images.sh

# --- host tools -------------------------------------------------------------
. test/nspawn.sh
phase "host tools" host_tools systemd-nspawn:systemd-container mmdebstrap:mmdebstrap zstd:zstd lintian:lintian rpmlint:rpmlint rpm:rpm

# The root filesystems build (or are waited for, when .ci/run's
# test/images.sh is making them) while the packages are made.
images_log=$(mktemp /tmp/agor-images.XXXXXX)
phase "root filesystems (beside the packages)" test/images.sh ${releases//-2/} >"$images_log" 2>&1 &
images_pid=$!
# AGOR_SUITE_BOOT_AFTER=FILE (.ci/run): the host's steps run beside make
# test at the lowest CPU priority, in the cores it leaves idle; the
# containers boot once FILE is there (make test done), at the normal one.
[ -z "${AGOR_SUITE_BOOT_AFTER:-}" ] || renice -n 19 -p $$ >/dev/null

# --- packages -----------------------------------------------------------------
packages() {
	echo "== building packages"
	make -s deb rpm PKG_VERSION=0.1.1 >/dev/null
	mkdir -p test/.cache
	cp dist/agor_0.1.1-1_amd64.deb dist/agor-0.1.1-1.x86_64.rpm test/.cache/
	make -s deb rpm >/dev/null # the version the README's `make deb` makes
}
phase packages packages
work=$(mktemp -d /tmp/agor-systemd.XXXXXX)
mkdir -p "$work/opt/dist"
cp dist/agor_0.1.0-1_amd64.deb test/.cache/agor_0.1.1-1_amd64.deb "$work/opt/"
# readme.sh follows the README: the package `make deb` made, as its dist/ holds it.
cp "$(ls -t dist/agor_*_amd64.deb | head -n 1)" "$(ls -t dist/agor-cockpit_*_all.deb | head -n 1)" "$work/opt/dist/"
cp README.md "$work/opt/"
# checks.sh runs the concern files (install.sh, socket.sh, ... upgrade.sh)
# with the helpers of lib.sh; this script is the container harness.
cp test/systemd/*.sh test/systemd/concerns.txt "$work/opt/"
# agor's Cockpit page (cockpit.sh): its package, and the browser driver
# with playwright-core from cockpit/node_modules (make deb installed it).
cp dist/agor-cockpit_0.1.0-1_all.deb test/systemd/cockpit-browser.mjs "$work/opt/"
mkdir -p "$work/opt/node_modules" && cp -r cockpit/node_modules/playwright-core "$work/opt/node_modules/"
[ -z "${AGOR_SUITE_ONLY:-}" ] || echo "$AGOR_SUITE_ONLY" >"$work/opt/only"
# AGOR_SUITE_BENCH=full: the benchmarks inside the concerns take every
# round (make bench); AGOR_SUITE_WHOLE=1: Debian 13 runs every concern it
# runs whole, not its release's part (lib.sh's rounds, whole_here).
[ "${AGOR_SUITE_BENCH:-}" != full ] || touch "$work/opt/bench-full"
[ -z "${AGOR_SUITE_WHOLE:-}" ] || touch "$work/opt/whole"
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
phase "previous release 5d53026" prev_release 5d53026 0.0.9 agor_prev
# The first release with the model gateway and its ledger (schema 7).
phase "previous release 421fcfc" prev_release 421fcfc 0.1.0 agor_gw
test_binaries() {
	CGO_ENABLED=0 go test -c -o "$work/opt/identity.test" ./internal/identity
	CGO_ENABLED=0 go build -o "$work/opt/coldbench" ./test/systemd/coldbench
	CGO_ENABLED=0 go build -o "$work/opt/daemonbench" ./test/systemd/daemonbench
	CGO_ENABLED=0 go build -o "$work/opt/demomodel" ./test/demomodel
}
phase "test binaries" test_binaries
# The four real agent CLIs for the prompt and modes checks (make test
# installs them), and the host's Node.js for gemini, which is a Node.js
# program (the others are native binaries).
phase "agent CLIs" ./test/agents.sh >/dev/null
node_bin=$(readlink -f "$(command -v node)")
# The host's npm (make test's deps install it), for the egress checks.
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")

# --- lint the packages on the host -------------------------------------------
lint_packages() {
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
}
phase "lintian and rpmlint" lint_packages
if [ -n "${AGOR_SUITE_BOOT_AFTER:-}" ]; then
	phase "make test (waited for)" bash -c 'while [ ! -e "$1" ]; do sleep 2; done' _ "$AGOR_SUITE_BOOT_AFTER"
	renice -n 0 -p $$ >/dev/null
fi

# --- teardown of a booted release, whatever happens --------------------------
# Each release boots from its own root ($work/root-RELEASE) in its own
# cgroup; cg and root are set by boot_and_check.
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
	[ -z "${cg:-}" ] || leave_cgroup "$cg"
	[ -z "${root:-}" ] || umount "$root" 2>/dev/null
	return 0
}
trap 'teardown; kill $others 2>/dev/null; wait $others; rm -rf "$work"' EXIT
others=


# env_root RELEASE: the environments concern's root (test/images.sh), also
# bench.sh's, for the cold start in an environment. Sets env_tar; not
# built when AGOR_SUITE_ONLY leaves both concerns out.
env_root() {
	env_tar=
	case " ${AGOR_SUITE_ONLY:-environments} " in *" environments "* | *" bench "*) ;; *) return 0 ;; esac
	env_tar=$(image_envroot "$1")
	env_tar=${env_tar#"$top/"}
}

# boot_and_check INSTANCE: a container of RELEASE (INSTANCE is RELEASE, or
# bookworm-2 for Debian 12's second): its root filesystem (built once,
# cached by package list and release) unpacked and booted, checks.sh run
# inside on the concerns of its part (concerns.txt); checks.sh's status
# goes to checks_rc (a function called in an || list would run without
# errexit, and a failed setup step must end the suite).
boot_and_check() {
	local inst=$1 release=${1%-2} part= tarball t0
	case $inst in
	*-2) part=2 ;;
	*) ! parted "$release" || part=1 ;;
	esac
	root=$work/root-$inst cg=agor-test-$$-$inst
	t0=$(date +%s)
	echo "== Debian $release${part:+, part $part}"
	phase "root filesystem (waited for)" image_rootfs "$release" >"$work/tarball-$inst" || { cat "$images_log"; exit 1; }
	tarball=$(cat "$work/tarball-$inst")
	phase "environment root (waited for)" env_root "$release" || { cat "$images_log"; exit 1; }
	phase "unpack and boot" unpack_and_boot "$inst" "$tarball"
	inside sh -c '. /etc/os-release; echo "== booted $PRETTY_NAME, systemd $(systemctl --version | sed -n "1s/^systemd \\([0-9]*\\).*/\\1/p")"'
	checks_rc=0
	inside AGOR_SUITE_PART="$part" bash /opt/tests/checks.sh || checks_rc=$?
	concern_times "$inst"
	# The Cockpit check's screenshots, out of the container before teardown.
	if [ -d "$root/var/log/agor-suite/cockpit" ]; then
		rm -rf "test/.logs/cockpit-$inst" && mkdir -p test/.logs && cp -r "$root/var/log/agor-suite/cockpit" "test/.logs/cockpit-$inst"
		echo "== screenshots: $top/test/.logs/cockpit-$inst/"
	fi
	echo "== Debian $release${part:+, part $part}: checks took $(( $(date +%s) - t0 )) s"
	phase teardown teardown
}

# parted RELEASE: whether RELEASE's concerns run in two containers side
# by side (its longest path halved): Debian 12's, in a whole run;
# concerns.txt's third column says which part each concern is in. A
# subset (AGOR_SUITE_ONLY) runs in one container.
parted() { [ "$1" = bookworm ] && [ -z "${AGOR_SUITE_ONLY:-}" ]; }

# inside CMD...: CMD in the booted container, as root.
inside() { nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

# concern_times RELEASE: each concern's time, recorded under this phase,
# and the slowest checks (the container's /var/log/agor-suite).
concern_times() {
	local log=$root/var/log/agor-suite
	if [ -s "$log/times.tsv" ]; then
		while IFS=$'\t' read -r s e c; do phase_record "$s" "$e" "${AGOR_PHASE:+$AGOR_PHASE > }concern $c"; done <"$log/times.tsv"
	fi
	if [ -s "$log/checks.tsv" ]; then
		mkdir -p test/.logs && cp "$log/checks.tsv" "test/.logs/checks-$1.tsv"
		echo "== the slowest checks on $1 (seconds, result, concern, check):"
		# (|| true: head leaving early may fail sort's write under pipefail.)
		sort -t $'\t' -k1,1 -rn "$log/checks.tsv" | head -n 12 | cut -c1-150 | sed 's/^/   /' || true
		[ -z "${AGOR_COUNTS:-}" ] || awk -F'\t' -v r="$1" '{ n[$2]++ } END { printf "systemd-%s %d %d\n", r, n["PASS"], n["FAIL"] }' "$log/checks.tsv" >>"$AGOR_COUNTS"
	fi
}

# unpack_and_boot INSTANCE TARBALL: the root on a tmpfs, its accounts and
# directory, booted; sets root and leader.
unpack_and_boot() {
	local inst=$1 tarball=$2 state
	echo "== unpacking root filesystem"
	mkdir -p "$root"
	mount -t tmpfs -o size=3G tmpfs "$root" # 1 GiB of it the root filesystem, Chromium most of that
	tar -C "$root" --zstd -xf "$tarball"
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
			--bind-ro="$work/opt:/opt/tests" --bind-ro="$top/test/.cache/agents:/opt/agents" --bind-ro="$node_bin:/opt/node/node" --bind-ro="$npm_dir:/opt/npm" ${env_tar:+--bind-ro="$top/$env_tar:/opt/envroot.tar.gz"} </dev/null >"$work/boot-$inst.log" 2>&1
	) &
	nspawn_pid=$!
	leader=
	for _ in $(seq 100); do
		leader=$(ps -o pid= --ppid "$nspawn_pid" | head -n1 | tr -d ' ' || true)
		[ -n "$leader" ] && [ "$(readlink "/proc/$leader/exe" 2>/dev/null)" = /usr/lib/systemd/systemd ] && break
		leader=
		sleep 0.1
	done
	[ -n "$leader" ] || { echo "container did not start:"; cat "$work/boot-$inst.log"; exit 1; }
	for _ in $(seq 100); do [ -S "/proc/$leader/root/run/systemd/private" ] && break; sleep 0.1; done
	state=$(inside timeout 60 systemctl is-system-running --wait || true)
	echo "== system state: $state"
	if [ "$state" != running ] && [ "$state" != degraded ]; then
		inside systemctl --failed --no-pager || true
		exit 1
	fi
	[ "$state" = running ] || inside systemctl --failed --no-pager --plain || true
}

# --- checks, the containers side by side -----------------------------------------
# The first container's lines as they come (Debian 12's first part); each
# other's (Debian 12's second part, Debian 13's concerns: concerns.txt)
# beside it, marked with its name. Their checks wait on events, not on
# the clock, so another container's load slows them without changing
# what they find.
# release_in_background INSTANCE: boot_and_check in a subshell of its own
# (its own container and teardown); its status in $work/rc-INSTANCE.
release_in_background() {
	(
		trap teardown EXIT
		phase "$1" boot_and_check "$1"
		echo "$checks_rc" >"$work/rc-$1"
	) 2>&1 | sed -u "s/^/[$1] /"
}
rc=0 failed=
instances=
for release in $releases; do
	instances="$instances $release"
	! parted "$release" || instances="$instances $release-2"
done
instances=${instances# }
first=${instances%% *}
for inst in ${instances#"$first"}; do
	release_in_background "$inst" &
	others="$others $!"
done
phase "$first" boot_and_check "$first"
[ "$checks_rc" = 0 ] || { rc=1; failed="$failed $first"; }
# A bare `wait` (one release, no others) would reap the images job too.
[ -z "$others" ] || wait $others || true
others=
for inst in ${instances#"$first"}; do
	[ "$(cat "$work/rc-$inst" 2>/dev/null)" = 0 ] || { rc=1; failed="$failed $inst"; }
done
wait "$images_pid" || true
echo "== suite took $(( $(date +%s) - start )) s${failed:+; failed on:$failed}"
exit $rc
