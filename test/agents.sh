#!/usr/bin/env bash
# Installs the four agent CLIs at pinned versions into test/.cache/agents
# (gitignored) for the agent tests: each in its own prefix, so a version
# change reinstalls only that one. Needs node and npm. With arguments, only
# those (e.g. test/agents.sh claude-code).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=test/.cache/agents
mkdir -p "$dir"
while read -r name pkg version bin; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
	if [ -x "$dir/$name/node_modules/.bin/$bin" ] && [ "$(cat "$dir/$name/.version" 2>/dev/null)" = "$version" ]; then
		continue
	fi
	echo "agents: installing $pkg@$version"
	rm -rf "${dir:?}/$name"
	mkdir -p "$dir/$name"
	npm install --silent --no-audit --no-fund --prefix "$dir/$name" "$pkg@$version" >/dev/null
	echo "$version" >"$dir/$name/.version"
done <<'LIST'
claude-code @anthropic-ai/claude-code 2.1.197 claude
codex @openai/codex 0.169.0 codex
gemini @google/gemini-cli 0.61.0 gemini
opencode opencode-ai 1.18.33 opencode
LIST
