#!/usr/bin/env bash
# Installs what `make test` needs on a fresh Debian/Ubuntu machine: a Go
# toolchain new enough for go.mod, gcc for the race detector (cgo), and the
# four agent CLIs (test/agents.sh) with Node.js.
set -euo pipefail
cd "$(dirname "$0")/.."

need_go=$(sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)
have_go=$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)

older() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" != "$2" ]; }

apt_install() {
	[ "$(id -u)" = 0 ] || { echo "deps: need root to apt-get install $*" >&2; return 1; }
	# Under the suites' apt lock (test/nspawn.sh): .ci/run builds their
	# images meanwhile, which installs mmdebstrap.
	if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ]; then
		flock /tmp/agor-apt.lock apt-get update -qq
	fi
	DEBIAN_FRONTEND=noninteractive flock /tmp/agor-apt.lock apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ -z "$have_go" ]; then
	# Debian's golang-go may be older than go.mod wants; Go >= 1.21 then
	# fetches the right toolchain itself (GOTOOLCHAIN=auto).
	echo "deps: installing Debian's Go"
	apt_install golang-go ca-certificates
	have_go=$(go env GOVERSION | sed 's/^go//')
fi
if older "$have_go" 1.21; then
	echo "deps: Go $have_go cannot fetch the Go $need_go toolchain go.mod needs; install Go >= $need_go (https://go.dev/doc/install)" >&2
	exit 1
fi
if ! command -v gcc >/dev/null; then
	echo "deps: installing gcc for the race detector"
	apt_install gcc libc6-dev
fi
# agorctl's completion tests load its scripts in the real shells.
if ! command -v zsh >/dev/null || ! command -v fish >/dev/null || [ ! -f /usr/share/bash-completion/bash_completion ]; then
	echo "deps: installing zsh, fish and bash-completion for agorctl's completion tests"
	apt_install zsh fish bash-completion
fi
# The sandbox's tests try ACLs and extended attributes outside a workspace.
if ! command -v setfacl >/dev/null || ! command -v getfattr >/dev/null; then
	echo "deps: installing acl and attr for the sandbox's tests"
	apt_install acl attr
fi
# Tests run as root start executors as this account (internal/executor/exectest).
if [ "$(id -u)" = 0 ]; then
	./test/testaccount.sh >/dev/null
fi
# The agent tests run the real agent CLIs (npm packages; gemini needs
# Node.js >= 20) against stand-in model servers on 127.0.0.1.
if ! command -v npm >/dev/null; then
	echo "deps: installing Node.js and npm for the agent CLIs"
	apt_install nodejs npm
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
	echo "deps: Node.js $(node --version) is older than the agent CLIs need (>= 20); install a newer one" >&2
	exit 1
fi
./test/agents.sh
# agor's Cockpit page: esbuild, PatternFly, xterm.js and, for the suite's
# browser check, playwright-core, as cockpit/package-lock.json pins them.
make -s cockpit/node_modules/.package-lock.json
