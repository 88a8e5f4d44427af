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
