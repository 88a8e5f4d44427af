# The README's "Installed" section followed literally, as a newcomer would:
# its first block as root, its second as alice, each line typed into a
# shell in tmux exactly as written (SESSION and TASK become the ids the
# lines before printed; KEY is a made-up key). Sourced by checks.sh right
# after install (uses lib.sh): it purges that install first, so the README's
# apt line installs on a machine that has never had agor.

# readme_blocks: the README's Installed section, one line a command, each
# block's lines prefixed by its number ("1 apt install ..."), comments kept.
readme_blocks() {
	awk '/^## /{ins = ($0 == "## Installed")} ins && /^```/{if (inb) {inb = 0} else {inb = 1; n++}; next} ins && inb && NF {print n, $0}' "$T/README.md"
}

# readme_line USER LINE: types LINE into USER's login shell in tmux and waits
# for it to end, answering what a person would: y to a permission question,
# Enter to apt's "Continue? [Y/n]", and in `agorctl terminal` `id -un`, then
# Ctrl-] to detach, and in `agorctl agent` (Claude Code's own UI) /exit
# once it is ready. Fails when the
# line's status is not 0. Its screen is printed, clipped.
readme_line() {
	local user=$1 line=$2 shell answered=0 confirmed=0 termed=0 exited=0 _ rc who
	shell="runuser -l $user"
	[ "$user" = root ] && shell="bash -l"
	tmux kill-server 2>/dev/null || true
	for _ in $(seq 50); do [ -S "/tmp/tmux-0/default" ] || break; sleep 0.1; done
	printf '%s\n' "$line" >/tmp/readme-line
	chmod 644 /tmp/readme-line
	# The shell reads the line from a file (bash -l -s): what runs is the line
	# exactly as the README writes it, quotes and all, and stdin stays the
	# terminal for what it asks.
	TERM=xterm-256color KEY=$README_KEY tmux -f /dev/null new-session -d -s agorterm -x 160 -y 50 \
		"cd ~$user && $shell -c 'export KEY=$README_KEY; . /tmp/readme-line'; echo readme-exit=\$?; sleep 600"
	for _ in $(seq 1200); do
		if pane | grep -q '^readme-exit='; then break; fi
		if [ $answered = 0 ] && pane | grep -q '\[y/N\]'; then tmux send-keys -t agorterm y Enter; answered=1; fi
		if [ $confirmed = 0 ] && pane | grep -qi 'continue? \[Y/n\]'; then tmux send-keys -t agorterm Enter; confirmed=1; fi
		# A login shell's prompt, user@host: whose terminal it is.
		who=$(pane | sed -n 's/^\([a-z][a-z0-9._-]*\)@agortest:.*/\1/p' | head -n 1)
		if [ $termed = 0 ] && [ -n "$who" ]; then
			tmux send-keys -t agorterm 'id -un' Enter
			wait_pane "^$who\$" >/dev/null
			tmux send-keys -t agorterm C-]
			termed=1
		fi
		# The UI's own quit, typed as she would: the command, then (once
		# the UI shows it) Enter.
		if [ $exited = 0 ] && [[ $line == *"agorctl agent"* ]] && pane | grep -q 'for shortcuts'; then
			tmux send-keys -t agorterm -l /exit
			wait_pane '/exit' >/dev/null
			tmux send-keys -t agorterm Enter
			exited=1
		fi
		sleep 0.1
	done
	pane | grep -v '^$' | sed -n '1,12p' | cut -c1-150 | sed 's/^/  | /'
	rc=$(pane | sed -n 's/^readme-exit=//p' | tail -n 1)
	tmux kill-server
	[ "$rc" = 0 ] || { echo "line exited ${rc:-(never ended)}: $line"; return 1; }
}

# newest_id KIND: the id of alice's newest session (KIND session) or of its
# newest task (KIND task), for the README's SESSION and TASK.
newest_id() {
	local s
	s=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	[ "$1" = session ] && { echo "$s"; return; }
	as alice agorctl tasks "$s" --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4
}

readme_installed() {
	# A machine that has never had agor: the earlier install purged, and
	# the suite's drop-ins (not the package's: purge leaves them) gone.
	rm -rf /etc/agor/config.d
	apt-get purge -y -qq agor >/dev/null 2>&1 || dpkg --purge agor >/dev/null
	! systemctl cat agor-daemon.service >/dev/null 2>&1
	# What the README leaves to the reader: the package where `make deb` put
	# it (root's shell starts in /root), an API key, and the model's URL (here
	# the stand-in) as the gateway's upstream in config.yaml, written once the
	# package has put it there.
	rm -rf /root/dist && mkdir -p /root/dist && cp "$T"/dist/*.deb /root/dist/
	README_KEY=sk-ant-readme-0123456789
	start_model -tools 2 -bash 'id -un > whoami.txt' -text 'I wrote whoami.txt.'
	rm -rf /home/alice/src
	local n line user ran=0
	while read -r n line; do
		user=root
		[ "$n" = 2 ] && user=alice
		case $line in *SESSION*) line=${line//SESSION/$(newest_id session)} ;; esac
		case $line in *TASK*) line=${line//TASK/$(newest_id task)} ;; esac
		echo "$user\$ $line"
		readme_line "$user" "$line" || return 1
		case $line in "apt install ./dist/agor_"*) readme_agents_yaml || return 1 ;; esac
		ran=$((ran + 1))
	done < <(readme_blocks)
	[ "$ran" -ge 8 ] || { echo "only $ran lines found in the README's Installed section"; return 1; }
	# By effect: the agent's command ran as alice where --cwd said.
	want "$(cat /home/alice/src/app/whoami.txt)" alice
	want "$(stat -c %U /home/alice/src/app/whoami.txt)" alice
	echo "$ran lines ran as written; ~alice/src/app/whoami.txt says alice, owned by alice"
}

# readme_agents_yaml points Claude Code at the stand-in model, as the README
# says: the CLI in /etc/agor/agents.yaml, and where its model requests go
# in /etc/agor/config.yaml (the packaged configuration has the model
# gateway on, whose upstream the daemon reads at its start).
readme_agents_yaml() {
	cat >>/etc/agor/agents.yaml <<'YAML'
claude-code:
  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
YAML
	grep -q '^gateway:$' /etc/agor/config.yaml || { echo "the packaged config.yaml has no gateway section"; return 1; }
	sed -i 's|^gateway:$|gateway:\n  upstreams: {anthropic: "http://127.0.0.1:18080"}|' /etc/agor/config.yaml
	systemctl restart agor-daemon.service
}
check "README, Installed: every line as written, as root then as alice, on $(. /etc/os-release; echo "$PRETTY_NAME")" readme_installed

# Where she works, with the configuration the README left (the packaged one,
# the gateway's upstream aside): alice's prompt in ~/src/app, naming nobody,
# runs there as her, confined (sandbox.prompts: workspace); from /tmp it is
# refused, saying what to type; root runs it for her naming her directory.
readme_where() {
	local out res rc=0 app=/home/alice/src/app
	# The README's prompts played the model's script; two more turns here.
	start_model -tools 2 -bash 'id -un > whoami.txt' -text 'I wrote whoami.txt.'
	rm -f $app/whoami.txt
	out=$(cd $app && as alice agorctl prompt 'write hello.txt' --mode bypassPermissions --json 2>&1 </dev/null) ||
		{ tail -n 5 <<<"$out" | cut -c1-300; return 1; }
	want "$(stat -c %U $app/whoami.txt 2>&1)" alice || rc=1
	res=$(grep '^{"result"' <<<"$out" || true) # whole: no early-exiting grep in a pipe (pipefail)
	[[ $res == *'"level":"workspace"'* && $res == *'"enforced":true'* && $res == *'"view":"namespace"'* ]] ||
		{ echo "not confined to its workspace in a view: ${res:0:400}"; rc=1; }
	echo "in $app, naming nobody: the prompt ran there as alice, confined to it (workspace, the namespace view)"
	out=$(cd /tmp && as alice agorctl prompt 'write hello.txt' 2>&1 </dev/null) && { echo "served from /tmp: $out"; rc=1; }
	echo "from /tmp: $(head -n 1 <<<"$out")"
	grep -q "is not in alice's home" <<<"$out" && grep -q -- "--cwd ~/src/app" <<<"$out" || rc=1
	rm -f $app/whoami.txt
	out=$(cd /root && agorctl prompt -u alice --cwd ~alice/src/app 'write hello.txt' --mode bypassPermissions 2>&1 </dev/null) ||
		{ tail -n 5 <<<"$out"; rc=1; }
	want "$(stat -c %U $app/whoami.txt 2>&1)" alice || rc=1
	echo "root, from /root: agorctl prompt -u alice --cwd ~alice/src/app ran in $app as alice"
	return $rc
}
check "where she works (packaged configuration): alice's agorctl prompt in ~/src/app runs there, confined; from /tmp it is refused naming what to type; root runs it for her with --cwd" readme_where

# The base configuration again, for the concerns after this one: the
# packaged config.yaml as shipped (the README's edit undone) and the
# suite's drop-in, which the daemon reads at its start and doctor lists.
readme_base() {
	local out
	base_config
	restart_daemon
	want "$(systemctl is-active agor-daemon.service)" active
	out=$(agorctl doctor 2>&1 || true)
	# Merged: the packaged file allows anyone; the drop-in, agorusers only.
	grep -E '^ok +config +/etc/agor/config.yaml with /etc/agor/config.d/10-suite.yaml: .*groups \[agorusers\]' <<<"$out" ||
		{ echo "doctor did not read the suite's drop-in: $(grep -E '^[a-zA-Z]+ +config ' <<<"$out")"; return 1; }
}
check "the suite's base: the packaged config.yaml as shipped, with the suite's drop-in config.d/10-suite.yaml merged over it (doctor names it)" readme_base
