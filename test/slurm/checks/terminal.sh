# agorctl terminal alice in tmux on the login host: her shell runs on the
# compute node of her job.
pane() { inside login tmux capture-pane -p -t slurmterm; }
wait_pane() {
	for _ in $(seq 150); do pane | grep -E -- "$1" >/dev/null && return 0; sleep 0.1; done
	echo "pane never showed /$1/:"; pane; return 1
}
terminal_on_node() {
	inside login tmux kill-server 2>/dev/null || true
	inside login env TERM=xterm-256color tmux -f /dev/null new-session -d -s slurmterm -x 100 -y 30 \
		"agorctl terminal alice; echo agorctl-exit=\$?; sleep 600" || return 1
	wait_pane 'alice@node[12]' || return 1
	inside login tmux send-keys -t slurmterm 'echo "$(id -un) on $(hostname)"' Enter
	wait_pane '^alice on node[12]$' || return 1
	inside login tmux send-keys -t slurmterm 'exit 3' Enter
	wait_pane 'agorctl-exit=3' || return 1
	pane | grep -E '^alice on' 
	inside login tmux kill-server
}
check "agorctl terminal alice: her shell on a compute node" terminal_on_node
