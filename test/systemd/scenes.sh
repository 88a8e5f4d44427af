# Helpers for scenes more than one concern plays (the daemon going under
# running work: prompt.sh, package.sh). Sourced by checks.sh after lib.sh.

task_of() { # newest task of alice's newest session
	local s
	s=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	as alice agorctl tasks "$s" --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4
}

# stored_once TASK T0: alice's TASK has every event the executor numbered
# stored once, in order: the store's sequences are 0..n-1, none twice, and
# n is the executor's own count (its journal's "task ended" line since T0).
# Prints n.
stored_once() {
	local task=$1 t0=$2 seqs n produced
	seqs=$(as alice agorctl events "$task" | grep -o '"sequence":[0-9]*' | cut -d: -f2)
	n=$(echo "$seqs" | wc -l)
	want "$(echo "$seqs" | sort -n | uniq | wc -l)" "$n" >&2 || return 1      # none twice
	want "$(echo "$seqs" | sort -n | tail -n 1)" "$((n - 1))" >&2 || return 1 # none missing: 0..n-1
	produced=$(journalctl --no-pager -o json -u agor-executor@alice.service --since "@$t0" MESSAGE='task ended' AGOR_TASK="$task" |
		grep -o '"AGOR_EVENTS":"[0-9]*"' | tail -n 1 | grep -o '[0-9]*')
	want "$produced" "$n" >&2 || return 1
	echo "$n"
}

# together HOW: the acceptance's scene at once: alice's prompt in an 8 s
# command, bob's terminal attached, carol's permission question open;
# then the daemon goes (HOW: restart is systemctl restart, kill is kill -9,
# apt is apt-get install of the next version, whose postinst restarts it).
# Alice's prompt completes with every event stored once in order, bob's
# shell is the same process, carol's question is asked again and approving
# it runs her command.
together() {
	local how=$1 a c bpid id _ pid t0 n
	start_model -bash 'sleep 8; echo "$(id -un)" > together.txt' -text 'done' -tools 8
	workspace alice p
	workspace carol p
	rm -f /home/alice/p/together.txt /home/carol/p/together.txt
	t0=$(date +%s)
	as alice agorctl prompt alice 'together' --mode bypassPermissions --cwd p >/tmp/tog-a.out 2>&1 </dev/null &
	a=$!
	in_tmux "agorctl terminal bob"
	wait_pane 'bob@'
	tmux send-keys -t agorterm 'echo marker-$((6*7)) pid=$$' Enter
	wait_pane '^marker-42 pid='
	bpid=$(pane | sed -n 's/^marker-42 pid=\([0-9]*\).*/\1/p' | head -n 1)
	as carol agorctl prompt carol 'together' --mode default --cwd p >/tmp/tog-c.out 2>&1 </dev/null &
	c=$!
	id=$(question_of carol)
	test -n "$id" || { echo "carol was not asked"; cat /tmp/tog-c.out; return 1; }
	for _ in $(seq 50); do grep -q Bash /tmp/tog-a.out && break; sleep 0.2; done
	pid=$(systemctl show -p MainPID --value agor-daemon.service)
	case $how in
	restart) systemctl restart agor-daemon.service ;;
	kill) kill -9 "$pid" ;;
	apt) apt-get install -y "$T/agor_0.1.1-1_amd64.deb" >/tmp/apt.log 2>&1 </dev/null || { cat /tmp/apt.log; return 1; } ;;
	esac
	id=$(question_of carol)
	test -n "$id" || { echo "carol's question was not asked again"; cat /tmp/tog-c.out; return 1; }
	as carol agorctl permissions approve "$id" --reason together
	wait "$a" || { echo "alice:"; cat /tmp/tog-a.out; return 1; }
	wait "$c" || { echo "carol:"; cat /tmp/tog-c.out; return 1; }
	grep '^completed' /tmp/tog-a.out >/dev/null
	grep '^completed' /tmp/tog-c.out >/dev/null
	want "$(cat /home/alice/p/together.txt)" alice
	want "$(cat /home/carol/p/together.txt)" carol
	n=$(stored_once "$(task_of)" "$t0")
	tmux send-keys -t agorterm 'echo after-$$' Enter
	wait_pane "^after-$bpid\$"
	tmux send-keys -t agorterm 'exit' Enter
	tmux kill-server
	echo "$how with alice streaming, bob's terminal (pid $bpid) and carol's question open: both prompts completed, alice's $n events stored once each in order, carol's approval (asked again) ran her command, bob's shell the same"
}
# question_of USER: the id of USER's first open permission question,
# waited for up to 30 s; "" if none came.
question_of() {
	local id="" _
	for _ in $(seq 150); do
		id=$({ as "$1" agorctl permissions list 2>/dev/null || true; } | { grep -o '"id":"[^"]*"' || true; } | head -n 1 | cut -d'"' -f4)
		[ -n "$id" ] && break
		sleep 0.2
	done
	echo "$id"
}
# together_as_allowed HOW: together with carol allowed for its length
# (the daemon's checks keep her out of agorusers), put back however it ends.
# The daemon keeps a user database answer 10 s (identity.PositiveTTL): it
# may hold her groups from before the usermod (its per-group limits and
# network lists look the users of running executors up), so the scene
# starts once the daemon lets her executor start. Run after other concerns
# that left her in agorusers (bench.sh), the wait was never seen.
together_as_allowed() {
	local _
	usermod -aG agorusers carol
	trap 'gpasswd -d carol agorusers >/dev/null 2>&1' EXIT # the check's subshell ends either way
	for _ in $(seq 60); do agorctl executors start carol >/dev/null 2>&1 && break; sleep 0.25; done
	together "$1"
}
