# Interactive agents under the shipped units (agorctl agent), driven in
# tmux as a person would: for each of the four real CLIs, alice in
# ~/src/app opens its own UI as herself; the UI runs as alice; a word she
# types is answered by the CLI's stand-in through the daemon's gateway
# (the stand-in sees the daemon's key, none of her processes hold it);
# the ledger counts the turn to her; Ctrl-] and agorctl terminal --attach
# keep the same process; the UI quits, its task completes; a headless
# `agorctl prompt --session` follow-up recalls the word; and, confined,
# a command she allows in the UI writes in ~/src/app, not outside it.
# Sourced by
# checks.sh after gateway.sh (gateway_config, gateway_agents,
# standin_requests; start_model, modes_models, in_tmux, pane,
# wait_screen, type_in: lib.sh);
# the configuration is put back at the end.

inter_word=PELICAN

# ui_pid: the pid alice's executor lists for her one terminal.
ui_pid() {
	"$T/daemonbench" -get /v1/executors/alice/terminals | python3 -c 'import json, sys
ts = json.load(sys.stdin).get("terminals") or []
if len(ts) != 1:
    sys.exit("alice has %d terminals: %s" % (len(ts), ts))
print(ts[0]["pid"])'
}

# started PID: the process's start time (since boot, in ticks): with the
# pid, which process it is.
started() { awk '{print $22}' "/proc/$1/stat"; }

# tree PID: PID and its descendants.
tree() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do tree "$c"; done
}

# inter_spec TOOL: the CLI's gateway upstream and stand-in, and its UI's
# words: "FAMILY PORT KEY MODEL BINARY READY QUIT QUITSHOWN ANSWER" (_ none).
inter_spec() {
	case $1 in
	claude-code) echo "anthropic 18080 sk-ant-suite-0123456789 claude-standin claude.exe for_shortcuts /exit _ Noted_(follow-up_1)." ;;
	codex) echo "openai 18081 sk-oai-suite-0123456789 gpt-6-sol codex for_shortcuts /quit exit_Codex done." ;;
	gemini) echo "gemini 18082 gm-suite-0123456789 _ gemini Type_your_message /quit Exit_the_cli Hello_from_the_Gemini_stand-in." ;;
	opencode) echo "openai 18083 sk-oai-suite-0123456789 _ opencode ctrl+p_commands /exit _ Hello_from_the_chat_completions_stand-in." ;;
	esac
}

# ledger_rows T0: alice's ledger since T0, "USERS REQUESTS IN OUT CR CW".
ledger_rows() {
	agorctl usage --user alice --since "$(date -d "@$1" +%Y-%m-%dT%H:%M:%S.%N%:z)" --json | python3 -c 'import json, sys
rows = json.load(sys.stdin)["rows"]
print(",".join(sorted({r["user"] for r in rows})) or "-", sum(r["requests"] for r in rows),
      sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows),
      sum(r["cache_read_tokens"] for r in rows), sum(r["cache_write_tokens"] for r in rows))'
}

# inter_setup TOOL [EXTRA]: the gateway with TOOL's upstream its stand-in
# (codex's and opencode's are both "openai"), EXTRA added to the
# configuration, a fresh stand-in (nothing counted), the CLIs' own URLs
# dead, alice's executor started afresh.
inter_setup() {
	local up port
	read -r up port _ <<<"$(inter_spec "$1")"
	[ -e /etc/agor/agents.yaml.inter-orig ] || cp /etc/agor/agents.yaml /etc/agor/agents.yaml.inter-orig # put back by inter_off
	gateway_config "  free: [gpt-6-sol]${2:+
$2}" "$up: \"http://127.0.0.1:$port\"" # codex's model, unpriced, would be refused
	gateway_agents
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	if [ "$1" = claude-code ]; then
		start_model -tools 0 -plain 4 # text turns: the word's, the recall's
	else
		modes_cmd='' modes_models # codex: no command, its answer at once
	fi
	as alice install -d /home/alice/src /home/alice/src/app
}

# inter_cli TOOL: the whole scene for one CLI; prints what it saw.
inter_cli() {
	local tool=$1 up port key model bin ready quit shown answer margs=() t0 pid start p uids id session n out ledger want_ledger
	read -r up port key model bin ready quit shown answer <<<"$(inter_spec "$tool")"
	ready=${ready//_/ } shown=${shown//_/ } answer=${answer//_/ }
	[ "$model" = _ ] || margs=(--model "$model")
	inter_setup "$tool"
	t0=$(date +%s.%N)
	in_tmux "cd /home/alice/src/app && setpriv --reuid=alice --regid=alice --init-groups agorctl agent --tool $tool ${margs[*]}"
	wait_screen "$ready" 120
	# The UI is alice's: its process, every one beneath it, and the CLI among them.
	pid=$(ui_pid)
	start=$(started "$pid")
	for p in $(tree "$pid"); do
		uids=$(awk '/^Uid:/ {print $2, $3, $4}' "/proc/$p/status" 2>/dev/null) || continue # gone since
		want "$uids" "$(id -u alice) $(id -u alice) $(id -u alice)" ||
			{ echo "pid $p of the UI's tree: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-120)"; return 1; }
	done
	for p in $(tree "$pid"); do cat "/proc/$p/cmdline" 2>/dev/null | tr '\0' ' '; echo; done | grep -F "$bin" >/dev/null ||
		{ echo "no $bin in the UI's tree:"; for p in $(tree "$pid"); do cat "/proc/$p/cmdline" 2>/dev/null | tr '\0' ' ' | cut -c1-120; echo; done; return 1; }
	want "$(readlink "/proc/$pid/cwd")" /home/alice/src/app
	type_in "Remember the word $inter_word."
	wait_screen "$answer" 120
	# The stand-in saw the daemon's key on every request; none of alice's
	# processes (the UI's among them, running) holds it.
	n=$(standin_requests "$port" | wc -l)
	[ "$n" -gt 0 ] || { echo "nothing reached the stand-in"; return 1; }
	want "$(standin_requests "$port" | cut -d' ' -f1 | sort -u)" "$key"
	for p in $(pgrep -u alice); do
		if grep -qaF "$key" "/proc/$p/environ" 2>/dev/null; then echo "pid $p of alice holds the key"; return 1; fi
	done
	# The ledger counts each of those requests to her, as the stand-in did
	# (a request the UI sends after its answer, a title, may be in flight).
	for _ in $(seq 50); do
		n=$(standin_requests "$port" | wc -l)
		want_ledger="alice $n $(standin_requests "$port" | awk '{i+=$2; o+=$3; r+=$4; w+=$5} END {print i, o, r, w}')"
		ledger=$(ledger_rows "$t0")
		[ "$ledger" = "$want_ledger" ] && break
		sleep 0.2
	done
	want "$ledger" "$want_ledger"
	# Detached, it runs on; attached again (as agorctl said), the same process.
	tmux send-keys -t agorterm C-]
	wait_screen 'agorctl-exit=0'
	id=$(pane | grep -o 'attach term_[0-9a-f]*' | tail -n 1 | cut -d' ' -f2) || true
	session=$(pane | tr -d '\n' | grep -o 'runs on in session [0-9a-f]*' | tail -n 1 | cut -d' ' -f5) || true
	[ -n "$id" ] && [ -n "$session" ] || { echo "no terminal or session id in the pane:"; pane | grep -v '^ *$'; return 1; }
	want "$(started "$pid")" "$start"
	in_tmux "setpriv --reuid=alice --regid=alice --init-groups agorctl terminal --attach $id"
	wait_screen "$answer" 60 # its recent output
	want "$(ui_pid)" "$pid"
	want "$(started "$pid")" "$start"
	# The replay holds what the UI drew, not the questions it asked its
	# terminal when it started: tmux answered those again as keys
	# (gemini showed ">|tmux 3.3a1;2c" in its input) before the replay
	# blanked them (internal/executor/terminal/queries.go).
	sleep 1
	if screen_has 'tmux 3'; then
		echo "after --attach, the terminal's answers to replayed questions were typed into $tool's input: $(pane | grep -F 'tmux 3' | head -n 1 | tr -s ' ')"
		return 1
	fi
	# Quit in the UI: agorctl exits 0, the task completes.
	if [ "$shown" = _ ]; then
		type_in "$quit"
	else # gemini and codex show the slash command they took (its description)
		tmux send-keys -t agorterm -l "$quit"
		wait_screen "$shown"
		tmux send-keys -t agorterm Enter
	fi
	wait_screen 'agorctl-exit=0' 60
	tmux kill-server
	for _ in $(seq 150); do as alice agorctl tasks "$session" --json 2>/dev/null | grep -q '"status":"completed"' && break; sleep 0.2; done
	as alice agorctl tasks "$session" --json | grep '"status":"completed"' >/dev/null ||
		{ echo "session $session's tasks:"; as alice agorctl tasks "$session" 2>&1; return 1; }
	# Headless, the same session: the stand-in's recall (from the history
	# the CLI sent) holds the word said in the UI.
	out=$(cd /home/alice/src/app && as alice agorctl prompt --session "$session" --tool "$tool" "${margs[@]}" 'What did I tell you before?' 2>&1 </dev/null) ||
		{ echo "the follow-up: $out"; return 1; }
	echo "$out" | grep -F "$inter_word" | grep 'You told me' >/dev/null || { echo "the follow-up recalls no $inter_word: $out"; return 1; }
	echo "$tool: UI pid $pid (alice's, in ~/src/app); $n requests with the daemon's key, in no process of hers; ledger $ledger; $id detached and attached, same process; quit, completed; the follow-up recalled $inter_word"
}

# Debian 13's part: one CLI through each scene (gemini's UI, whose
# questions to its terminal the release's tmux answers; Claude Code
# confined): the pty, the relay and tmux are what the release changes,
# and every CLI meets that release's unit in modes.sh and gateway.sh.
for inter_tool in claude-code codex gemini opencode; do
	inter_check=whole_check
	[ "$inter_tool" != gemini ] || inter_check=check
	$inter_check "interactive: alice's $inter_tool UI in tmux (agorctl agent in ~/src/app) runs as her, is answered through the gateway with the daemon's key (none of her processes hold it), metered to her; detach and attach keep its process; after quit, a headless --session follow-up recalls the word said in it" inter_cli "$inter_tool"
done

# inter_questions: what each UI shows when it asks whether to run a
# command (claude-code, codex, gemini, opencode), its first choice allowing it.
inter_questions='Do you want to proceed|Would you like to run|Allow execution|Allow once|Permission required'

# inter_outside TOOL: in TOOL's UI, with sandbox.prompts the packaged
# workspace (the suite's configuration since install.sh names none),
# alice asks for a command that writes in the workspace and then outside
# it, in her home, and allows it when the UI asks: the first file is
# there (the command ran, as her), the second is not (the kernel refused
# it; unconfined, as the suite's configuration runs it, it lands).
inter_outside() {
	local tool=$1 up port key model bin ready quit shown answer margs=() cmd prompt done_text _i
	read -r up port key model bin ready quit shown answer <<<"$(inter_spec "$tool")"
	ready=${ready//_/ }
	[ "$model" = _ ] || margs=(--model "$model")
	cmd="touch inside-$tool.txt; touch /home/alice/outside-$tool.txt"
	inter_setup "$tool" "sandbox:
  prompts: workspace"
	done_text="The command finished."
	case $tool in
	claude-code) start_model -bash "$cmd" -text 'done.' -tools 1; done_text=done. ;;
	codex) modes_cmd=$cmd modes_models; done_text=done. ;;
	esac
	rm -f "/home/alice/src/app/inside-$tool.txt" "/home/alice/outside-$tool.txt"
	prompt="run it. $cmd"
	case $tool in gemini | opencode) prompt="run the shell command: $cmd" ;; esac
	in_tmux "cd /home/alice/src/app && setpriv --reuid=alice --regid=alice --init-groups agorctl agent --tool $tool ${margs[*]}"
	wait_screen "$ready" 120
	type_in "$prompt"
	for _i in $(seq 150); do
		[ -e "/home/alice/src/app/inside-$tool.txt" ] && break
		if pane | grep -E "$inter_questions" >/dev/null; then tmux send-keys -t agorterm Enter; sleep 1; fi
		sleep 0.4
	done
	[ -e "/home/alice/src/app/inside-$tool.txt" ] || { echo "the command never ran; the screen:"; pane | grep -v '^ *$' | tail -n 25; return 1; }
	wait_screen "$done_text" 60 # the command is over
	want "$(stat -c %U "/home/alice/src/app/inside-$tool.txt")" alice
	if [ -e "/home/alice/outside-$tool.txt" ]; then echo "$tool wrote outside its workspace"; return 1; fi
	if [ "$shown" = _ ]; then
		type_in "$quit"
	else
		tmux send-keys -t agorterm -l "$quit"
		wait_screen "${shown//_/ }"
		tmux send-keys -t agorterm Enter
	fi
	wait_screen 'agorctl-exit=0' 60
	tmux kill-server
	echo "$tool: inside-$tool.txt written (alice's), /home/alice/outside-$tool.txt absent"
}

for inter_tool in claude-code codex gemini opencode; do
	inter_check=whole_check
	[ "$inter_tool" != claude-code ] || inter_check=check
	$inter_check "interactive: alice's $inter_tool UI, confined by sandbox.prompts: workspace, runs a command she allows: its write in the workspace lands, its write in her home outside it is refused (absent on disk)" inter_outside "$inter_tool"
done

inter_off() {
	drop_dropin 50-gateway # the base again
	mv /etc/agor/agents.yaml.inter-orig /etc/agor/agents.yaml
	restart_daemon
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
}
check "interactive: the configuration put back" inter_off
