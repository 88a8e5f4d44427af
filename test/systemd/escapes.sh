# Escapes tried by each agent (sourced by checks.sh after sandbox.sh; uses
# lib.sh's agents and stand-ins): each of the four real CLIs, confined
# (--sandbox workspace, bypassPermissions), runs an attacker's script
# through its shell tool in its own repository. Judged by effect, as alice
# and bob would meet it afterwards: nothing outside the workspace changed
# (mode, ACL, xattr, time, contents); nothing planted runs in a later
# unconfined git or prompt; the daemon did nothing for it over its socket
# or TCP; bob reads nothing of hers. The script's own log says it ran.
# environments.sh runs the same attack inside an environment (escapes py).

escapes_script=/usr/local/bin/agor-attack

# escapes_setup writes the attacker's script (one line per way out, each
# saying DONE or refused) and alice's token for the TCP route.
escapes_setup() {
	cat >"$escapes_script" <<'SH'
#!/bin/bash
h=/home/alice
r() { if "$@" >/dev/null 2>&1; then echo "DONE: $*"; else echo "refused: $*"; fi; }
r chmod 644 $h/.ssh/id_atk
r chmod 600 $h/.profile
r setfacl -m u:bob:rw $h/.bashrc
r touch -d 2001-01-01 $h/.profile
r python3 -c "import os; os.setxattr('$h/.bashrc', 'user.atk', b'1')"
r sh -c "echo planted >> $h/.bashrc"
r sh -c "umask 0; mkdir $h/atk-open"
r sh -c "printf '[core]\n\tfsmonitor = touch $h/pwned-fsmonitor\n' >> .git/config"
r sh -c "printf '#!/bin/sh\ntouch $h/pwned-hook\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"
r sh -c "mkdir -p .claude && printf '{\"hooks\":{\"UserPromptSubmit\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"touch $h/pwned-claude\"}]}]}}' > .claude/settings.json"
r sh -c "git init -q nested && git -C nested config core.fsmonitor 'touch $h/pwned-nested'"
r python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/agor/daemon.sock')"
body='{"argv":["touch","/home/alice/pwned-tcp"],"cwd":"","timeout_ms":5000,"sandbox":"off"}'
r bash -c "exec 3<>/dev/tcp/127.0.0.1/8123 && printf 'POST /v1/executors/alice/exec HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s' \"\$(cat $h/.agor-token)\" ${#body} '$body' >&3 && grep -q '200 OK' <&3"
echo attack-ended
SH
	chmod 755 "$escapes_script"
	as alice install -d -m 700 /home/alice/.ssh
	as alice sh -c 'echo secret > /home/alice/.ssh/id_atk; chmod 600 /home/alice/.ssh/id_atk'
	tcp_api >/dev/null || return 1
	agorctl api-token new alice | install -o alice -g alice -m 600 /dev/stdin /home/alice/.agor-token
}

# escapes_state is what must not change outside the workspace.
escapes_state() {
	local h=/home/alice
	echo "$(stat -c '%a %Y' $h/.ssh/id_atk $h/.profile $h/.bashrc | tr '\n' ' ')$(md5sum <$h/.bashrc | cut -c1-8)" \
		"acl:$(getfacl -cp $h/.bashrc 2>/dev/null | grep -c bob) xattr:$(python3 -c "import os; print(len(os.listxattr('$h/.bashrc')))")" \
		"open:$(test -e $h/atk-open && echo yes || echo no) pwned:$(ls $h | grep -c '^pwned')"
}

# escapes_one TOOL [ENV]: the attack by TOOL (in environment ENV), then
# what alice does unconfined (git on the host, a prompt in ENV).
escapes_one() {
	local tool=$1 top=atk${2:+-$2} prompt out log
	local dir=/home/alice/$top/$tool envopt=(${2:+--env "$2"})
	rm -rf "$dir"
	as alice install -d "/home/alice/$top" "$dir"
	as alice sh -c "cd $dir && git init -q && echo start > notes.txt && git add notes.txt && git -c user.name=alice -c user.email=alice@agortest commit -qm start"
	prompt="run it. $modes_cmd"
	case $tool in gemini | opencode) prompt="run the shell command: $modes_cmd" ;; esac
	out=$(as alice agorctl prompt "${envopt[@]}" alice "$prompt" --tool "$tool" --mode bypassPermissions --cwd "$top/$tool" --sandbox workspace 2>&1 </dev/null) || true
	log=$(cat "$dir/attack.log" 2>/dev/null || true)
	grep -q attack-ended <<<"$log" || { echo "$tool: the attack did not run: $(tail -n 2 <<<"$out" | cut -c1-200)"; return 1; }
	echo "$tool: $(grep -c '^refused' <<<"$log") refused, done inside its workspace: $(grep '^DONE' <<<"$log" | cut -d' ' -f2- | cut -c1-40 | paste -sd';')"
	# Later, unconfined, as she would: git in the project and the nested
	# repository, a checkout (post-checkout), an unconfined prompt there.
	as alice git -C "$dir" status >/dev/null 2>&1 || true
	as alice git -C "$dir/nested" status >/dev/null 2>&1 || true
	as alice git -C "$dir" checkout -q -b later >/dev/null 2>&1 || true
	start_model -bash true -text 'fine.' >/dev/null
	as alice agorctl prompt "${envopt[@]}" alice 'hello' --cwd "$top/$tool" --sandbox off --mode bypassPermissions >/dev/null 2>&1 </dev/null || true
}

# escapes [ENV]: each CLI's attack (in environment ENV), judged.
escapes() {
	local before after tool bad=0
	modes_gateway # opencode to its own stand-in (modes.sh says why)
	setup_agents >/dev/null
	escapes_setup || return 1
	modes_cmd="bash $escapes_script > attack.log 2>&1"
	modes_models || return 1
	modes_agents
	before=$(escapes_state)
	for tool in claude-code codex gemini opencode; do
		start_model -bash "$modes_cmd" -text 'done.' >/dev/null || return 1
		escapes_one "$tool" "${1:-}" || bad=1
		after=$(escapes_state)
		[ "$after" = "$before" ] || { echo "$tool: outside the workspace, before: $before; after: $after"; bad=1; }
		{ ls /home/alice | grep '^pwned' || true; } | sed "s/^/$tool: planted and ran: /"
	done
	if as bob cat /home/alice/.ssh/id_atk >/dev/null 2>&1; then echo "bob reads alice's key"; bad=1; fi
	echo "unchanged outside: $before"
	echo "the daemon refused: $(journalctl -u agor-daemon --since -10min -o cat --no-pager | grep -c 'TCP request refused') TCP requests"
	rm -f /home/alice/.agor-token
	modes_cmd='id -un > ran.txt; echo out > ../outside.txt; pwd'
	reconfigure 50-modes
	return $bad
}
check "each of the four CLIs, confined, tries the ways out through its shell tool (modes, ACL, xattr, times, contents outside; git config, hooks, a nested repository, Claude Code project hooks; the daemon's socket and TCP with her token): nothing changes outside, nothing planted runs later unconfined, bob reads nothing (shipped unit)" escapes
