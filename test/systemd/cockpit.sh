# agor's page in Cockpit, in a real headless Chromium. Sourced by checks.sh
# after the prompt checks (uses setup_agents and start_model of prompt.sh).
# cockpit-ws, cockpit-bridge and Debian's chromium are in the container's
# root filesystem; the browser runs here, beside cockpit-ws, driven by
# playwright-core (cockpit-browser.mjs) on the host's Node.js.

cockpit_shots=/var/log/agor-suite/cockpit # run.sh copies it out to test/.logs/cockpit

cockpit_install() {
	dpkg -i $T/agor-cockpit_0.1.0-1_all.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	want "$(dpkg-query -W -f '${Status}' agor-cockpit)" "install ok installed"
	want "$(dpkg-query -W -f '${Depends}' agor-cockpit)" "agor, cockpit-bridge"
	test -f /usr/share/cockpit/agor/manifest.json
	test -f /usr/share/cockpit/agor/index.html
	# Cockpit's bridge, as alice, finds the page among its packages.
	as alice cockpit-bridge --packages | grep -E '^agor[[:space:]]' || { as alice cockpit-bridge --packages; return 1; }
	# No asset from elsewhere: every script, style and font is the package's own.
	if grep -rlE '(src|href)="https?://|url\(["'"'"']?https?://' /usr/share/cockpit/agor; then echo "the page fetches from the network"; return 1; fi
	systemctl start cockpit.socket
	want "$(systemctl is-active cockpit.socket)" active
	echo "agor-cockpit $(dpkg-query -W -f '${Version}' agor-cockpit) installed; cockpit-ws $(dpkg-query -W -f '${Version}' cockpit-ws) listening on 9090"
}
check "agor-cockpit installs beside cockpit-ws; the bridge lists the page, which loads nothing from the network" cockpit_install

# The passwords Cockpit's PAM login asks for. Root may log in here (Cockpit
# refuses root by default: /etc/cockpit/disallowed-users).
cockpit_accounts() {
	printf 'alice:alice-Cockpit-1\nbob:bob-Cockpit-1\ncarol:carol-Cockpit-1\nroot:root-Cockpit-1\n' | chpasswd
	# carol is an operator by api.admin_group (its default, agor-admins).
	groupadd -f agor-admins
	usermod -a -G agor-admins carol
	cp /etc/cockpit/disallowed-users /tmp/disallowed-users.orig 2>/dev/null || true
	: >/etc/cockpit/disallowed-users
}

# daemon_post PATH BODY (python3 -c): the daemon's raw reply to a POST on
# its socket, for the page's wording to be compared with.
daemon_post='import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("/run/agor/daemon.sock")
b = sys.argv[2].encode()
s.sendall(b"POST " + sys.argv[1].encode() + b" HTTP/1.0\r\nHost: agor\r\nContent-Type: application/json\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b)
print(s.makefile(encoding="utf-8").read())'

# cockpit_project: alice's newest session is in ~/cockpit, a project of
# hers, so the prompt box starts there (projects.js: her sessions'
# directories that exist, newest first, never the home).
cockpit_project() {
	install -d -o alice -g alice /home/alice/cockpit
	as alice python3 -c "$daemon_post" /v1/sessions '{"agentic_tool":"claude-code","cwd":"cockpit"}' | grep '"cwd":"cockpit"' >/dev/null
}

cockpit_browser() {
	cockpit_accounts
	setup_agents
	start_model -bash 'id -un > cockpit-ran.txt; pwd' -text 'I wrote cockpit-ran.txt.'
	cockpit_project
	rm -f /home/alice/cockpit/cockpit-ran.txt
	rm -rf "$cockpit_shots"
	mkdir -p "$cockpit_shots"
	local t0 rc=0 task
	t0=$(date +%s)
	rm -f /home/bob/from-browser.txt
	# bob has a session of his own, so that his list is not empty by default.
	as bob python3 -c "$daemon_post" /v1/sessions '{"agentic_tool":"claude-code","cwd":"."}' | grep '"unix_user":"bob"' >/dev/null
	ALICE_PW=alice-Cockpit-1 BOB_PW=bob-Cockpit-1 CAROL_PW=carol-Cockpit-1 ROOT_PW=root-Cockpit-1 \
		timeout 600 /opt/node/node $T/cockpit-browser.mjs "$cockpit_shots" >/tmp/browser.out 2>&1 || rc=$?
	groupdel agor-admins # as the other concerns know the host
	grep -v "console\] verbose" /tmp/browser.out
	echo "the browser took $(($(date +%s) - t0)) s, exit $rc"
	[ "$rc" = 0 ] || { journalctl --no-pager --since "@$t0" | grep -iE 'cockpit|pam|auth' | grep -v gnutls_handshake | tail -n 30; return 1; }
	# Judged on disk and in the daemon, not by the page alone: the tool ran
	# as alice, after her approval given in the page, in the directory the
	# page started at (her newest session's), under workspace.
	want "$(sed -n "s/^working directory, the page's default: \([^ ]*\) .*/\1/p" /tmp/browser.out | head -n 1)" cockpit
	want "$(cat /home/alice/cockpit/cockpit-ran.txt)" alice
	want "$(stat -c %U /home/alice/cockpit/cockpit-ran.txt)" alice
	task=$(task_of)
	as alice agorctl events "$task" | grep '"event_type":"permission_decided"' | grep '"approved":true' | grep 'approved in Cockpit' >/dev/null ||
		{ echo "task $task: no approval from the page among its events"; as alice agorctl events "$task" | cut -c1-200; return 1; }
	want "$(as alice agorctl tasks "$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)" --json | grep -o '"status":"[a-z]*"' | tail -n 1)" '"status":"completed"'
	grep '"action":"permission_decided"' /var/lib/agor/audit.jsonl | grep "\"task\":\"$task\"" | tail -n 1
	echo "on disk: /home/alice/cockpit/cockpit-ran.txt (the page's default directory) is alice's and says alice; task $task completed, approved in Cockpit"
	# The refusal in the page is the daemon's own wording of it.
	local said
	said=$(as alice python3 -c "$daemon_post" /v1/executors/alice/prompt '{"agentic_tool":"claude-code","prompt":"x","cwd":".","sandbox":"workspace"}' |
		sed -n 's/.*"message":"\([^"]*\)".*/\1/p')
	test -n "$said"
	want "$(sed -n 's/^daemon error in the page: //p' /tmp/browser.out)" "$said"
	echo "the daemon said, and the page showed: $said"
	# bob's upload went through his executor: his file, on disk.
	want "$(stat -c %U /home/bob/from-browser.txt)" bob
	want "$(cat /home/bob/from-browser.txt)" "uploaded by bob's browser"
	# root's Stop and Start went to systemd: bob's unit stopped, then ran again.
	journalctl --no-pager -o cat -u agor-daemon.service --since "@$t0" | grep 'executor stopped' >/dev/null ||
		{ echo "the daemon logged no executor stopped"; return 1; }
	journalctl --no-pager -o cat -u agor-executor@bob.service --since "@$t0" | grep -E '^(Stopped|Started) ' | tail -n 3
	# At least root's (bob's own idle exits and other stops may add to it).
	[ "$(journalctl --no-pager -o cat -u agor-executor@bob.service --since "@$t0" | grep -cE '^Stopped ')" -ge 1 ] ||
		{ echo "bob's unit was never stopped"; return 1; }
	want "$(systemctl is-active agor-executor@bob.service)" active
	echo "on disk: /home/bob/from-browser.txt is bob's; agor-executor@bob.service stopped by root's Stop, running again after Start"
	ls "$cockpit_shots"
}
check "Cockpit in headless Chromium: alice logs in, prompts Claude Code (default mode) in the working directory the page starts at (her project, under workspace), approves its question in the page, sees the output and completed (the file is alice's on disk), sees a refusal in the daemon's words, gets a terminal showing id -un alice, detaches and attaches; bob (German) sees none of her sessions, uploads, views and downloads a file; root sees both executors, stops and starts bob's, the audit trail and doctor; carol (api.admin_group) is an operator too (screenshots)" cockpit_browser

# cockpit_resume: the page's half of "clients carry on": alice's prompt,
# sent from the page, is in an 8 s command when the daemon restarts; the
# page follows the task on to completed (cockpit-browser.mjs resume), the
# command ran, and every event is stored once.
cockpit_resume() {
	cockpit_accounts
	groupdel agor-admins # as the other concerns know the host
	start_model -bash 'sleep 8; echo resumed | tee cockpit-resumed.txt' -text 'slept'
	cockpit_project
	rm -f /home/alice/cockpit/cockpit-resumed.txt "$cockpit_shots/resume-ready"
	local t0 rc=0 node pid n
	t0=$(date +%s)
	ALICE_PW=alice-Cockpit-1 STEPS=resume timeout 300 /opt/node/node $T/cockpit-browser.mjs "$cockpit_shots" >/tmp/browser-resume.out 2>&1 &
	node=$!
	for _ in $(seq 600); do [ -e "$cockpit_shots/resume-ready" ] && break; kill -0 $node 2>/dev/null || break; sleep 0.2; done
	[ -e "$cockpit_shots/resume-ready" ] || { wait $node || true; cat /tmp/browser-resume.out; return 1; }
	pid=$(systemctl show -p MainPID --value agor-daemon.service)
	systemctl restart agor-daemon.service
	wait $node || rc=$?
	grep -v "console\] verbose" /tmp/browser-resume.out
	[ "$rc" = 0 ] || { echo "browser exit $rc"; return 1; }
	want "$(cat /home/alice/cockpit/cockpit-resumed.txt)" resumed
	n=$(stored_once "$(task_of)" "$t0")
	echo "daemon (pid $pid) restarted under a prompt sent from the page: the page followed the task to completed; $n events stored once each in order"
}
whole_check "Cockpit in headless Chromium: the daemon restarts under alice's prompt sent from the page; the page says so, follows the task on and shows its output once and completed" cockpit_resume

# cockpit_long: a turn of 5,000 events drawn by alice's page through its
# own path (the stream's lines, the transcript, a chunk a frame), then
# scrolled through; how long each took is printed (cockpit-browser.mjs
# long), with screenshots.
cockpit_long() {
	cockpit_accounts
	groupdel agor-admins # as the other concerns know the host
	local rc=0
	ALICE_PW=alice-Cockpit-1 STEPS=long timeout 300 /opt/node/node $T/cockpit-browser.mjs "$cockpit_shots" >/tmp/browser-long.out 2>&1 || rc=$?
	grep -v "console\] verbose" /tmp/browser-long.out
	[ "$rc" = 0 ] || { echo "browser exit $rc"; return 1; }
}
whole_check "Cockpit in headless Chromium: a turn of 5,000 events is drawn in alice's page and scrolled through to its end (timings printed, screenshots)" cockpit_long

# cockpit_interactive: alice opens Claude Code's own UI with agorctl
# agent in tmux (in ~/cockpit, her project); in the page the session is
# listed, its task names the terminal its UI runs in, and Attach shows
# that UI in the Terminal tab, where a word she types is answered
# (cockpit-browser.mjs interactive, screenshots); detached there, the UI
# runs on (same process), and quit from her shell its task completes.
cockpit_interactive() {
	local rc=0
	cockpit_ui || rc=$?
	tmux kill-server 2>/dev/null || true
	reconfigure 50-cockpit-gateway # the base again, whatever became of the scene
	return $rc
}
cockpit_ui() {
	cockpit_accounts
	groupdel agor-admins # as the other concerns know the host
	start_model -tools 0 -plain 4 # text turns
	cockpit_project
	# Through the gateway, as interactive agents run on a packaged host
	# (interactive.sh has the gateway's own checks of them): the UI holds
	# the placeholder, whose use Claude Code's settings record as approved.
	set_dropin 50-cockpit-gateway "$(printf 'gateway:\n  enabled: true\n  upstreams: {anthropic: "http://127.0.0.1:18080"}\n  prices: {claude-standin: {input: 10000}}\n')"
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	local rc=0 session task id pid start
	in_tmux "cd /home/alice/cockpit && setpriv --reuid=alice --regid=alice --init-groups agorctl agent --tool claude-code --model claude-standin"
	wait_screen "for shortcuts" 120
	session=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	task=$(task_of)
	id=$(as alice agorctl events "$task" | grep '"event_type":"terminal"' | grep -o 'term_[0-9a-f]*' | head -n 1)
	[ -n "$id" ] || { echo "task $task has no terminal event:"; as alice agorctl events "$task" | cut -c1-200; return 1; }
	pid=$(as alice agorctl events "$task" | grep '"event_type":"terminal"' | grep -o '"pid":[0-9]*' | head -n 1 | cut -d: -f2)
	start=$(awk '{print $22}' "/proc/$pid/stat")
	ALICE_PW=alice-Cockpit-1 STEPS=interactive SESSION=$session TERMINAL=$id timeout 300 \
		/opt/node/node $T/cockpit-browser.mjs "$cockpit_shots" >/tmp/browser-interactive.out 2>&1 || rc=$?
	grep -v "console\] verbose" /tmp/browser-interactive.out
	[ "$rc" = 0 ] || { echo "browser exit $rc"; return 1; }
	# The page's attach took the UI over from tmux, and its Detach left it
	# running: the same process, which her shell attaches to and quits.
	want "$(awk '{print $22}' "/proc/$pid/stat" 2>/dev/null)" "$start"
	in_tmux "setpriv --reuid=alice --regid=alice --init-groups agorctl terminal --attach $id"
	wait_screen "for shortcuts" 60
	type_in /exit
	wait_screen 'agorctl-exit=0' 60
	tmux kill-server
	for _ in $(seq 150); do as alice agorctl tasks "$session" --json | grep -q '"status":"completed"' && break; sleep 0.2; done
	as alice agorctl tasks "$session" --json | grep '"status":"completed"' >/dev/null ||
		{ echo "session $session's tasks:"; as alice agorctl tasks "$session"; return 1; }
	echo "session $session (task $task) ran Claude Code's UI on $id (pid $pid): listed and attached in the page, detached there, the same process quit from her shell; completed"
}
check "Cockpit in headless Chromium: alice's interactive Claude Code session (agorctl agent in tmux) is listed in the page, its task names the UI's terminal, Attach shows the UI in the Terminal tab and answers what she types there, Detach leaves it running (same process); quit from her shell, completed (screenshots)" cockpit_interactive

cockpit_lint() {
	cat $T/lint-cockpit.txt
	! grep -qE '^(E|W):|^agor.*: (E|W):' $T/lint-cockpit.txt
	grep -x 'agor' $T/lint-cockpit.txt >/dev/null && grep -x 'cockpit-bridge' $T/lint-cockpit.txt >/dev/null
}
check "agor-cockpit: lintian and rpmlint clean; the rpm, like the deb, depends on agor and cockpit-bridge" cockpit_lint

cockpit_remove() {
	cp /tmp/disallowed-users.orig /etc/cockpit/disallowed-users 2>/dev/null || true
	dpkg -r agor-cockpit >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	test ! -e /usr/share/cockpit/agor
	if as alice cockpit-bridge --packages | grep -E '^agor[[:space:]]'; then echo "the bridge still lists the page"; return 1; fi
	echo "removed: /usr/share/cockpit/agor gone, the bridge no longer lists it"
}
check "dpkg -r agor-cockpit removes the page (before package.sh removes agor, which it depends on)" cockpit_remove
