# Every agent in every permission mode under the shipped unit (sourced by
# checks.sh after the prompt checks: uses start_model and task_of). Each
# of the four real CLIs, against its stand-in model, is asked to run
# `id -un > ran.txt; echo out > ../outside.txt; pwd` in a directory of its
# own (m/TOOL/COLUMN), every permission question approved by a second
# agorctl; judged on
# disk: ran.txt exists, is alice's and holds her name (plan: no file, for
# every agent); a write outside the cwd lands only where nothing confines
# the agent (codex's default and acceptEdits run under agor's workspace
# level: codex's own sandbox cannot start under the unit).

modes_cmd='id -un > ran.txt; echo out > ../outside.txt; pwd'
modes_cols="default acceptEdits bypassPermissions plan default+workspace acceptEdits+workspace bypassPermissions+workspace plan+workspace"

# modes_approver approves every question of alice's until killed.
modes_approver() {
	local id
	while :; do
		for id in $(as alice agorctl permissions list 2>/dev/null | grep -o '"id":"[^"]*"' | cut -d'"' -f4); do
			as alice agorctl permissions approve "$id" --reason 'suite approves' >/dev/null 2>&1 || true
		done
		sleep 0.2
	done
}

# modes_cell TOOL COL: one prompt; prints "TOOL COL asked ran outside".
modes_cell() {
	local tool=$1 col=$2 mode=${2%%+*} dir=m/$1/$2 args=(--sandbox off) prompt out task evs asked ran outside
	# The unconfined columns say so: what they show is each CLI's own
	# permission modes with nothing of agor's around them, and the packaged
	# sandbox.prompts would confine a prompt that names no level.
	[ "$col" = "${col%+workspace}" ] || args=(--sandbox workspace)
	prompt="run it. $modes_cmd"
	case $tool in gemini | opencode) prompt="run the shell command: $modes_cmd" ;; esac
	as alice install -d "/home/alice/m" "/home/alice/m/$tool" "/home/alice/$dir"
	rm -f "/home/alice/$dir/ran.txt" "/home/alice/m/$tool/outside.txt"
	out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --mode "$mode" --cwd "$dir" "${args[@]}" --json 2>&1 </dev/null) || true
	task=$(grep -o '"task_id":"[0-9a-f]*"' <<<"$out" | head -n 1 | cut -d'"' -f4)
	evs=$(as alice agorctl events "$task" 2>/dev/null || true)
	# asked: a person answered (the approver's reason); refused: agor did,
	# for plan; unasked: the mode decided, or nothing was asked.
	asked=unasked
	grep -q '"reason":"suite approves"' <<<"$evs" && asked=asked
	grep -q '"reason":"plan mode changes nothing"' <<<"$evs" && asked=refused
	ran="no file"
	if [ -e "/home/alice/$dir/ran.txt" ]; then
		ran="$(stat -c %U "/home/alice/$dir/ran.txt"):$(head -n 1 "/home/alice/$dir/ran.txt")"
	fi
	outside=denied
	[ -e "/home/alice/m/$tool/outside.txt" ] && outside=written
	grep -q '"status":"completed"' <<<"$out" || ran="$ran (not completed: $(tail -n 1 <<<"$out" | cut -c1-160))"
	echo "$tool $col $asked $ran $outside"
}

# modes_want TOOL COL: what a cell must show (asked, ran, outside).
modes_want() {
	local tool=$1 col=$2
	case $col in
	plan) echo "refused no file denied" ;;
	plan+workspace) echo "refused no file denied" ;;
	bypassPermissions+workspace) echo "unasked alice:alice denied" ;;
	default+workspace | acceptEdits+workspace) echo "asked alice:alice denied" ;;
	default | acceptEdits) [ "$tool" = codex ] && echo "asked alice:alice denied" || echo "asked alice:alice written" ;;
	bypassPermissions) echo "unasked alice:alice written" ;;
	esac
}

# modes_gateway: the gateway's one OpenAI upstream is codex's stand-in
# (the suite's drop-in); opencode's, another OpenAI API, is on 18083, so
# here opencode is handed its key and goes there itself (gateway.sh takes
# opencode through the gateway, its upstream switched).
modes_gateway() { reconfigure 50-modes 'gateway: {direct_agents: [opencode]}'; }

# The columns this release runs. Debian 13's: every CLI under its unit,
# asked and approved unconfined (codex's own sandbox meets the unit
# there) and confined by agor. Debian 12's: five; acceptEdits (with and
# without workspace) and plan+workspace answer as default,
# default+workspace and plan do under the unit, and internal/daemon/e2e's
# TestModesEachAgent runs every CLI in every mode. AGOR_SUITE_WHOLE=1:
# all eight (docs/testing.md).
modes_cols_here="default bypassPermissions plan default+workspace bypassPermissions+workspace"
[ ! -e "$T/whole" ] || modes_cols_here=$modes_cols
whole_here || modes_cols_here="default bypassPermissions+workspace"

modes_matrix() {
	local modes_cols=$modes_cols_here
	modes_gateway
	setup_agents >/dev/null
	start_model -bash "$modes_cmd" -text 'done.' -tools 8
	modes_models
	modes_agents
	modes_approver &
	local approver=$! tool col got want bad=0 row rows=()
	# One agent's cells in a row, the four agents side by side.
	for tool in claude-code codex gemini opencode; do
		(for col in $modes_cols; do modes_cell "$tool" "$col"; done >"/tmp/modes-$tool.txt") &
		rows+=($!)
	done
	wait "${rows[@]}" || true
	kill "$approver" 2>/dev/null
	printf '%-12s' agent; for col in $modes_cols; do printf ' | %-28s' "$col"; done; echo
	for tool in claude-code codex gemini opencode; do
		row=$(printf '%-12s' "$tool")
		while read -r t c asked rest; do
			got="$asked ${rest% *} ${rest##* }"
			want=$(modes_want "$t" "$c")
			[ "$got" = "$want" ] || { bad=1; echo "MISMATCH $t $c: got '$got', want '$want'" >&2; }
			row+=$(printf ' | %-28s' "$asked, ${rest% *}, out ${rest##* }")
		done <"/tmp/modes-$tool.txt"
		echo "$row"
	done
	return $bad
}
check "each agent in the permission modes ($modes_cols_here), under the shipped unit: the command runs as alice where approved, plan changes nothing, nothing confined writes outside its cwd, codex's default is confined by agor (table)" modes_matrix

# modes_commit: each of the four CLIs, confined (--sandbox workspace, in
# its own repository), edits a file and commits it through its shell
# tool, and tries to add a hook: the commit is in the repository
# afterwards (git works in the view: objects, refs, index, logs), the
# hook is not (the view has .git/hooks read-only).
modes_commit() {
	local cmd='echo edit >> notes.txt; git add -A; git -c user.name=agent -c user.email=agent@agortest commit -qm agent-edit; printf x > .git/hooks/post-commit; git log --oneline | wc -l > committed.txt'
	local saved=$modes_cmd tool dir prompt out log bad=0
	modes_cmd=$cmd
	start_model -log -bash "$cmd" -text 'done.' -tools 2
	modes_models
	modes_cmd=$saved
	systemctl stop agor-executor@alice.service
	for tool in claude-code codex gemini opencode; do
		dir=/home/alice/c/$tool
		rm -rf "$dir"
		as alice install -d "$dir"
		as alice git -C "$dir" init -q
		as alice sh -c "cd $dir && echo start > notes.txt && git add notes.txt && git -c user.name=alice -c user.email=alice@agortest commit -qm start"
		prompt="run it. $cmd"
		case $tool in gemini | opencode) prompt="run the shell command: $cmd" ;; esac
		out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --mode bypassPermissions --cwd "c/$tool" --sandbox workspace --json 2>&1 </dev/null) || true
		# Read whole, then searched: under pipefail, grep -q leaving early
		# fails the pipeline (git log's SIGPIPE) though the commit is there.
		log=$(as alice git -C "$dir" log --oneline 2>&1 || true)
		if ! grep -q agent-edit <<<"$log"; then
			echo "$tool: no commit: $(tail -n 2 <<<"$out" | cut -c1-200)"
			echo "its events:"; cut -c1-400 <<<"$out" | tail -n 12
			echo "the repository: committed.txt $(cat "$dir/committed.txt" 2>&1); reflog: $(as alice git -C "$dir" reflog 2>&1 | tr '\n' ';')"
			echo "all refs: $(as alice git -C "$dir" log --all --oneline 2>&1 | tr '\n' ';'); status: $(as alice git -C "$dir" status --short 2>&1 | tr '\n' ';')"
			echo "disabled: $(find "$dir" -name '*.agor-disabled' 2>&1 | tr '\n' ' '); .git: $(ls -a "$dir/.git" | tr '\n' ' ')"
			echo "the stand-in model's requests:"; tail -n 5 /tmp/model.log 2>/dev/null
			journalctl -u agor-executor@alice.service --since "-2min" -o cat --no-pager | tail -n 8 | cut -c1-300
			bad=1
			continue
		fi
		if [ -e "$dir/.git/hooks/post-commit" ]; then
			echo "$tool: a hook was planted"
			bad=1
			continue
		fi
		echo "$tool: committed in its view ($(as alice git -C "$dir" log --oneline | wc -l) commits), .git/hooks unchanged"
	done
	return $bad
}
check "the four CLIs, confined (--sandbox workspace), edit and commit in their repositories through their shell tools; the hook each tries to add is refused (shipped unit)" modes_commit

# modes_rebase: each of the four CLIs, confined (--sandbox workspace, in
# a repository of its own on branch main, the four at once), through its
# shell tool: branches, commits on the branch and on main, rebases the
# branch onto main, squashes a fixup into it with a todo-driven rebase
# (git rebase -i, no editor: the sequencer's state in .git), and tries to
# add a hook. Judged as alice with her own git: the branch's one commit
# sits on main's, the tree is clean, the post-run guard disabled nothing
# (a rebase's state is git's own), and no hook is there.
modes_rebase_cmd='export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@agortest GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@agortest; git checkout -qb topic && echo t > topic.txt && git add topic.txt && git commit -qm on-topic && git checkout -q main && echo m > main.txt && git add main.txt && git commit -qm on-main && git checkout -q topic && git rebase -q main && echo t2 >> topic.txt && git commit -qam "fixup! on-topic" && GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash main && echo rebased; printf x > .git/hooks/post-rewrite; git status --short'

modes_rebase() {
	local saved=$modes_cmd tool bad=0 pids=()
	modes_cmd=$modes_rebase_cmd
	start_model -log -bash "$modes_rebase_cmd" -text 'done.' -tools 2
	modes_models
	modes_cmd=$saved
	systemctl stop agor-executor@alice.service
	as alice install -d /home/alice/rb
	for tool in claude-code codex gemini opencode; do
		modes_rebase_one "$tool" >"/tmp/rebase-$tool.txt" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	for tool in claude-code codex gemini opencode; do
		cat "/tmp/rebase-$tool.txt"
		grep -q "^$tool: rebased" "/tmp/rebase-$tool.txt" || bad=1
	done
	return $bad
}

# modes_rebase_one TOOL: TOOL's turn in rb/TOOL, and what alice's git
# finds there afterwards.
modes_rebase_one() {
	local tool=$1 dir=/home/alice/rb/$1 prompt out
	rm -rf "$dir"
	as alice install -d "$dir"
	as alice git -C "$dir" init -q -b main
	as alice sh -c "cd $dir && echo start > notes.txt && git add notes.txt && git -c user.name=alice -c user.email=alice@agortest commit -qm start"
	prompt="run it. $modes_rebase_cmd"
	case $tool in gemini | opencode) prompt="run the shell command: $modes_rebase_cmd" ;; esac
	out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --mode bypassPermissions --cwd "rb/$tool" --sandbox workspace --json 2>&1 </dev/null) || true
	modes_rebased "$tool" "$dir" && return 0
	echo "its events:"; cut -c1-300 <<<"$out" | tail -n 8
	echo "reflog: $(as alice git -C "$dir" reflog 2>&1 | tr '\n' ';'); .git: $(ls -a "$dir/.git" | tr '\n' ' ')"
}

# modes_rebased TOOL DIR: one line saying whether DIR's history is what
# the rebases make (alice's git, unconfined), and the tree clean, nothing
# disabled, no hook added.
modes_rebased() {
	local tool=$1 dir=$2 base main topic ontop status disabled hook=none
	base=$(as alice git -C "$dir" rev-parse -q --verify 'topic^' 2>&1 || true)
	main=$(as alice git -C "$dir" rev-parse -q --verify main 2>&1 || true)
	topic=$(as alice git -C "$dir" log --format=%s main..topic 2>&1 | tr '\n' , || true)
	ontop=$(as alice git -C "$dir" show topic:topic.txt 2>&1 | tr '\n' , || true)
	status=$(as alice git -C "$dir" status --porcelain 2>&1 || true)
	disabled=$(find "$dir" -name '*.agor-disabled' | tr '\n' ' ')
	[ ! -e "$dir/.git/hooks/post-rewrite" ] || hook=planted
	if [ -n "$main" ] && [ "$base" = "$main" ] && [ "$topic" = on-topic, ] && [ "$ontop" = t,t2, ] &&
		[ -z "$status" ] && [ -z "$disabled" ] && [ "$hook" = none ] && [ ! -e "$dir/.git/rebase-merge" ]; then
		echo "$tool: rebased: topic's one commit ($(as alice git -C "$dir" log --oneline main | wc -l) on main) sits on main's, the tree clean, nothing disabled, no hook added"
		return 0
	fi
	echo "$tool: not rebased: topic^ '$base', main '$main', main..topic '$topic', topic.txt '$ontop', status '$status', disabled '$disabled', hook $hook"
	return 1
}
check "the four CLIs, confined (--sandbox workspace), branch, commit, rebase and autosquash (git rebase -i, no editor) through their shell tools: her git finds the branch on main, the tree clean, nothing disabled by the guard, no hook added (shipped unit)" modes_rebase

# modes_recall: each of the four CLIs is told a word, its executor (and
# with it the warm agent) is restarted, and a follow-up in the same
# session asks for it back: the stand-in answers with the user messages
# the CLI sent it, so the word comes back only if the CLI loaded its
# session from disk.
modes_recall() {
	setup_agents >/dev/null
	start_model -tools 0 -plain 8
	modes_models
	modes_agents
	local tool word out s bad=0
	workspace alice r
	for tool in claude-code codex gemini opencode; do
		word="tulip$RANDOM"
		out=$(as alice agorctl prompt alice "Remember the word $word." --tool "$tool" --mode bypassPermissions --cwd r 2>&1 </dev/null) || { echo "$tool, first prompt: $out"; bad=1; continue; }
		s=$(echo "$out" | sed -n 's/.* · session \([0-9a-f]*\)$/\1/p' | tail -n 1)
		systemctl restart agor-executor@alice.service # its warm agent goes with it
		out=$(as alice agorctl prompt alice "What did I tell you before?" --tool "$tool" --session "$s" --mode bypassPermissions --cwd r 2>&1 </dev/null) ||
			{ echo "$tool, follow-up: $out"; bad=1; continue; }
		if grep -q "$word" <<<"$out"; then
			echo "$tool: recalled $word in session $s after its executor restarted"
		else
			echo "$tool: did not recall $word: $out"
			bad=1
		fi
	done
	return $bad
}
whole_check "each of the four CLIs recalls a word from its first prompt in a follow-up after its warm process is gone (executor restarted)" modes_recall
check "modes: the configuration put back (the base again)" reconfigure 50-modes
