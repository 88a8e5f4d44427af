#!/usr/bin/env bash
# Creates, as root, the account executors run as when tests and the demo
# run as root (internal/executor/exectest.Account): executors refuse root, and
# nobody like every special account. A regular uid, no home, no login
# shell, no password. Prints its name.
set -euo pipefail
name=agortest
if [ "$(id -u)" = 0 ] && ! id "$name" >/dev/null 2>&1; then
	echo "creating the account $name, which executors run as when run by root" >&2
	useradd --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
		--comment "agor tests (executors run as this account)" "$name"
fi
echo "$name"
