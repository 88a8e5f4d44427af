# agorctl terminal, driven as a person would, inside tmux (in_tmux, wait_pane: lib.sh). Sourced by checks.sh (uses lib.sh).

terminal_tmux() {
	in_tmux "agorctl terminal alice"
	wait_pane 'alice@'
	tmux send-keys -t agorterm 'id -un' Enter
	wait_pane '^alice$'
	tmux send-keys -t agorterm 'less /etc/passwd' Enter
	wait_pane '^root:x:0:0'
	tmux send-keys -t agorterm q
	tmux send-keys -t agorterm 'clear; echo back-from-less' Enter
	wait_pane '^back-from-less'
	tmux resize-window -t agorterm -x 120 -y 40
	sleep 0.3
	tmux send-keys -t agorterm 'stty size' Enter
	wait_pane '^40 120$'
	tmux send-keys -t agorterm 'exit 5' Enter
	wait_pane 'agorctl-exit=5'
	pane | grep -v '^$' | tail -n 4
	tmux kill-server
	echo "id -un showed alice; less ran full-screen and quit; resize seen as 40 120; exit 5 became agorctl's status"
}
check "agorctl terminal alice in tmux: id -un, a full-screen program, resize, exit status" terminal_tmux

# Detach with Ctrl-], come back with --attach: the raw stream replays the
# scrollback and the shell is the same one.
terminal_reattach() {
	in_tmux "agorctl terminal alice"
	wait_pane 'alice@'
	tmux send-keys -t agorterm 'echo marker-$((6*7)) pid=$$' Enter
	wait_pane '^marker-42 pid='
	local pid id
	pid=$(pane | sed -n 's/^marker-42 pid=\([0-9]*\).*/\1/p' | head -n 1)
	tmux send-keys -t agorterm C-]
	wait_pane 'agorctl-exit=0'
	id=$(pane | grep -o 'term_[0-9a-f]*' | tail -n 1)
	case $id in term_?*) ;; *) echo "no terminal id in the pane:"; pane; return 1 ;; esac
	in_tmux "agorctl terminal --attach $id alice"
	wait_pane '^marker-42 pid='
	tmux send-keys -t agorterm 'echo again-$$' Enter
	wait_pane "^again-$pid\$"
	tmux send-keys -t agorterm 'exit 7' Enter
	wait_pane 'agorctl-exit=7'
	tmux kill-server
	echo "detached $id with Ctrl-] (exit 0), reattached: scrollback replayed, same shell (pid $pid), exit 7 passed through"
}
check "agorctl terminal: Ctrl-] detaches, --attach replays the scrollback into the same shell" terminal_reattach

# The daemon restarts under an attached terminal: the shell lives in the
# executor, and agorctl terminal attaches again to the same process.
terminal_daemon_restart() {
	in_tmux "agorctl terminal alice"
	wait_pane 'alice@'
	tmux send-keys -t agorterm 'echo marker-$((6*7)) pid=$$' Enter
	wait_pane '^marker-42 pid='
	local pid
	pid=$(pane | sed -n 's/^marker-42 pid=\([0-9]*\).*/\1/p' | head -n 1)
	systemctl restart agor-daemon.service
	want "$(systemctl is-active agor-daemon.service)" active
	# The raw stream may be handed to the executor (then the client never
	# sees the daemon go), or carried by the daemon (then agorctl attaches
	# again): either way the same shell answers.
	tmux send-keys -t agorterm 'echo after-$$' Enter
	wait_pane "^after-$pid\$"
	tmux send-keys -t agorterm 'exit 4' Enter
	wait_pane 'agorctl-exit=4'
	local how="its stream did not go through the daemon"
	if pane | grep -q 'attached again'; then how="agorctl attached again"; fi
	tmux kill-server
	echo "systemctl restart agor-daemon under an attached terminal: $how; same shell (pid $pid) answered after, exit 4 passed through"
}
check "agorctl terminal across systemctl restart of the daemon: the same shell answers after it" terminal_daemon_restart

# Without a terminal on standard input agorctl terminal refuses at once and
# starts nothing; --no-tty drives the shell through pipes instead.
terminal_no_tty() {
	local out rc=0 before after
	before=$("$T/daemonbench" -get /v1/executors/alice/terminals | { grep -o '"terminal_id"' || true; } | wc -l)
	out=$(as alice agorctl terminal alice </dev/null 2>&1) || rc=$?
	echo "agorctl terminal alice </dev/null: exit $rc: $out"
	want "$rc" 1
	echo "$out" | grep 'standard input is not a terminal' >/dev/null
	after=$("$T/daemonbench" -get /v1/executors/alice/terminals | { grep -o '"terminal_id"' || true; } | wc -l)
	want "$after" "$before"
	rc=0
	out=$(printf 'id -un\nexit 3\n' | as alice agorctl terminal --no-tty alice 2>&1) || rc=$?
	# (bash wraps each command's output in bracketed-paste escapes: the
	# line ends with the name)
	echo "with --no-tty: exit $rc, the line of id -un: $(echo "$out" | tr -d '\r' | grep -E 'alice$' | cat -v)"
	want "$rc" 3
	echo "$out" | tr -d '\r' | grep -E 'alice$' >/dev/null || { echo "$out" | cat -v; return 1; }
}
check "agorctl terminal without a terminal on stdin refuses with a clear message and starts nothing; --no-tty pipes a shell (id -un, exit 3)" terminal_no_tty

# What an executor starts gets its person's login umask (Debian's
# login.defs: UMASK 022 with user private groups, so 0002 for alice), not
# the unit's UMask=0077; a GECOS umask= (pam_umask's) comes first.
terminal_umask() {
	local gecos t0
	t0=$(date +%s)
	systemctl stop agor-executor@alice.socket agor-executor@alice.service # started afresh below
	want "$(agorctl exec alice -- sh -c umask)" 0002
	want "$(systemctl show -p UMask --value agor-executor@alice.service)" 0077
	in_tmux "agorctl terminal alice"
	wait_pane 'alice@'
	tmux send-keys -t agorterm 'echo "um=$(umask)"; touch term-umask.txt; exit' Enter
	wait_pane 'agorctl-exit=0'
	pane | grep -x 'um=0002' >/dev/null || { pane; return 1; }
	want "$(stat -c %a /home/alice/term-umask.txt)" 664
	gecos=$(getent passwd bob | cut -d: -f5)
	usermod -c 'Bob,,,,umask=0027' bob
	systemctl stop agor-executor@bob.socket agor-executor@bob.service # the umask is read at start
	want "$(agorctl exec bob -- sh -c umask)" 0027
	usermod -c "$gecos" bob
	systemctl stop agor-executor@bob.socket agor-executor@bob.service
	journalctl -u agor-executor@alice.service --since "@$t0" -o cat --no-pager | grep 'umask 02 from' | tail -n 1 | grep . ||
		{ echo "no umask line in alice's executor's journal since it started:"; journalctl -u agor-executor@alice.service --since "@$t0" -o cat --no-pager | head -n 5; return 1; }
	echo "alice: exec and terminal umask 0002 (a new file 664) under the unit's UMask=0077; bob with GECOS umask=0027: 0027"
}
check "agents, commands and terminals get the person's login umask (login.defs, user private groups; GECOS umask=), not the unit's UMask=0077" terminal_umask
