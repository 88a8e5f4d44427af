# Pre-warming (issue 40) under the shipped units, the gateway on: for each
# of the four CLIs, what a person waits for on a new session's first
# prompt cold, pre-warmed, and on its warm follow-up (medians); and the
# host's memory when 20 people pre-warm at once under warm_per_host.
# Sourced by checks.sh after gateway (gateway_config, prewarm_as) and
# modes (modes_models, modes_agents). Times are printed, never asserted.

# Medians of 5 in make bench, of 2 in CI (lib.sh's rounds): the checks
# (cold is cold, the pre-warm is run on, the follow-up is warm) hold in
# every round.
pw_rounds=$(rounds 5 2)

# pw_time USER ARGS...: a prompt as USER (agorctl prompt ARGS, --json);
# prints "MS SESSION PREWARMED WARM", MS from the command's start to the
# first event made of the model's answer (its message, text, thinking or
# tool call).
pw_time() {
	local u=$1 t0 first="" line now answer
	answer='type":"(text_delta|thinking_delta|tool_call)"|type":"message_start".*"role":"assistant"'
	shift
	t0=$(date +%s%N)
	: >/tmp/pw.out
	while IFS= read -r line; do
		printf '%s\n' "$line" >>/tmp/pw.out
		if [ -z "$first" ] && [[ $line =~ $answer ]]; then
			now=$(date +%s%N)
			first=$(((now - t0) / 1000000))
		fi
	done < <(as "$u" agorctl prompt "$u" --json --mode bypassPermissions --sandbox off "$@" 2>&1 </dev/null)
	grep -q '"status":"completed"' /tmp/pw.out || { tail -n 3 /tmp/pw.out >&2; return 1; }
	[ -n "$first" ] || { echo "no event made of the model's answer:" >&2; cut -c1-200 /tmp/pw.out | tail -n 5 >&2; return 1; }
	echo "$first $(grep -o '"session_id":"[0-9a-f]*"' /tmp/pw.out | head -n 1 | cut -d'"' -f4)" \
		"$(grep -q '"prewarmed":true' /tmp/pw.out && echo true || echo false)" \
		"$(grep -q '"warm":true' /tmp/pw.out && echo true || echo false)"
}

# pw_median N...: the median of the numbers given.
pw_median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# pw_upstreams TOOL: the gateway sends TOOL's API to its stand-in (codex
# and opencode speak two OpenAI APIs, each its own stand-in), daemon
# restarted.
pw_upstreams() {
	local openai=18081
	[ "$1" != opencode ] || openai=18083
	gateway_config "$pw_agents" "anthropic: \"http://127.0.0.1:18080\", openai: \"http://127.0.0.1:$openai\", gemini: \"http://127.0.0.1:18082\""
	restart_daemon
}

# No pre-warm at an executor's start here: each round starts alice's
# executor afresh, and that pre-warm of her last session would start a
# second CLI beside the one timed.
pw_agents='agents:
  prewarm_at_executor_start: false'

# pw_fresh: alice's executor started afresh (her warm agents gone: they
# have run turns, and a pre-warm never evicts one of those, no_room), so
# that cold and pre-warmed first prompts each meet a new executor.
pw_fresh() {
	systemctl stop agor-executor@alice.service 2>/dev/null
	as alice agorctl exec alice -- true </dev/null >/dev/null
}

# pw_tool TOOL: pw_rounds cold first prompts, then pw_rounds pre-warmed
# ones each with its follow-up; prints the medians and ratios.
pw_tool() {
	local tool=$1 model="" i r cold=() pre=() follow=() wait_s body
	[ "$tool" != claude-code ] || model=claude-standin
	as alice install -d "/home/alice/pw/$tool"
	pw_upstreams "$tool"
	# Not counted: the executor's start, and the CLI's first run in her
	# home (its own caches and settings files).
	pw_time alice "warming up" --tool "$tool" --cwd "pw/$tool" ${model:+--model "$model"} >/dev/null || return 1
	for i in $(seq "$pw_rounds"); do
		pw_fresh
		r=$(pw_time alice "hello $i" --tool "$tool" --cwd "pw/$tool" ${model:+--model "$model"}) || return 1
		set -- $r
		[ "$3" = false ] || { echo "$tool: a cold prompt ran pre-warmed"; return 1; }
		cold+=("$1")
	done
	# The time a person takes to write her prompt: longer than the CLI's
	# cold start, so that its handshake is over when the prompt comes.
	wait_s=$(awk -v c="$(pw_median "${cold[@]}")" 'BEGIN { w = c * 1.5 / 1000 + 1; printf "%.1f", w < 2 ? 2 : w }')
	body="{\"agentic_tool\":\"$tool\",\"cwd\":\"pw/$tool\",\"permission_mode\":\"bypassPermissions\",\"sandbox\":\"off\"${model:+,\"model\":\"$model\"}}"
	for i in $(seq "$pw_rounds"); do
		pw_fresh
		r=$(prewarm_as alice "$body")
		[[ $r == *'"status":"started"'* ]] || { echo "$tool: pre-warm refused: $r"; return 1; }
		sleep "$wait_s"
		r=$(pw_time alice "hello again $i" --tool "$tool" --cwd "pw/$tool" ${model:+--model "$model"}) || return 1
		set -- $r
		[ "$3" = true ] || { echo "$tool: the prompt of the pre-warm's options did not run on it"; return 1; }
		pre+=("$1")
		r=$(pw_time alice "and then $i" --tool "$tool" --cwd "pw/$tool" --session "$2" ${model:+--model "$model"}) || return 1
		set -- $r
		[ "$4" = true ] || { echo "$tool: the follow-up was not warm"; return 1; }
		follow+=("$1")
	done
	local c p f
	c=$(pw_median "${cold[@]}") p=$(pw_median "${pre[@]}") f=$(pw_median "${follow[@]}")
	printf '%-12s cold %6s ms  pre-warmed %5s ms  follow-up %5s ms  pre/follow %5s  pre/cold %5s  (waited %ss)\n' "$tool" "$c" "$p" "$f" \
		"$(awk -v a="$p" -v b="$f" 'BEGIN { printf "%.2f", a / b }')" "$(awk -v a="$p" -v b="$c" 'BEGIN { printf "%.2f", a / b }')" "$wait_s"
}

pw_each() {
	local tool bad=0
	[ -e /etc/agor/agents.yaml.gw-orig ] || cp /etc/agor/agents.yaml /etc/agor/agents.yaml.gw-orig # put back by gateway_off
	start_model -tools 0 -text 'Noted.' -plain 1000 >/dev/null || return 1
	modes_cmd=true modes_models || return 1
	gateway_agents
	echo "medians of $pw_rounds, ms from agorctl prompt to the first event made of the model's answer:"
	for tool in claude-code codex gemini opencode; do
		pw_tool "$tool" || bad=1
	done
	return $bad
}
check "prewarm: for each of the four CLIs, a new session's first prompt cold, pre-warmed (run on its pre-warm) and its warm follow-up, medians of $pw_rounds (printed)" pw_each

# pw_host: 20 people (pw01...), allowed, each pre-warming Claude Code at
# once; prints the warm agents that stay and what the host holds.
pw_host() {
	local n=20 cap i u main kept rss mem c
	cap=$(cat /etc/agor/config.yaml "$confd"/*.yaml | sed -n 's/^ *warm_per_host: *\([0-9]*\).*/\1/p' | tail -n 1) # the last file's word
	cap=${cap:-16}
	pw_upstreams claude-code
	for i in $(seq -w 1 $n); do
		u=pw$i
		id "$u" >/dev/null 2>&1 || useradd --create-home --groups agorusers "$u"
	done
	for i in $(seq -w 1 $n); do
		prewarm_as "pw$i" '{"agentic_tool":"claude-code","cwd":".","permission_mode":"default","sandbox":"off","model":"claude-standin"}' >/tmp/pw-$i.out &
	done
	wait
	grep -L '"status":"started"' /tmp/pw-*.out | sed 's/^/not started: /' || true
	sleep 15 # the starts are over, the daemon's cap has asked for the least recently used back
	# An agent is a child of its person's executor; everything else of
	# hers running is the executor and its agents' processes.
	kept=0 rss=0 mem=0
	for i in $(seq -w 1 $n); do
		u=pw$i main=$(systemctl show -p MainPID --value "agor-executor@pw$i.service")
		[ "$main" != 0 ] || continue
		kept=$((kept + $(pgrep -c -P "$main" || true)))
		rss=$((rss + $(ps -u "$u" -o rss= | awk '{s += $1} END {print s + 0}') - $(ps -o rss= -p "$main" | awk '{print $1 + 0}')))
		c=$(systemctl show -p MemoryCurrent --value "agor-executor@$u.service")
		case $c in '' | *[!0-9]*) mem=none ;; *) [ "$mem" = none ] || mem=$((mem + c)) ;; esac
	done
	[ "$mem" = none ] && mem="not counted (no memory controller here)" || mem="$((mem / 1048576)) MiB in all"
	echo "$n people pre-warmed Claude Code at once: $kept agents kept (warm_per_host $cap), their resident memory $((rss / 1024)) MiB" \
		"($((rss / 1024 / (kept > 0 ? kept : 1))) MiB each); the $n executors' cgroups $mem; host MemAvailable $(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo) MiB"
	[ "$kept" -le "$cap" ] || { echo "more pre-warmed agents than warm_per_host"; return 1; }
	[ "$kept" -gt 0 ] || { echo "no pre-warmed agent at all"; return 1; }
}

pw_host_down() {
	local i
	for i in $(seq -w 1 20); do
		systemctl stop "agor-executor@pw$i.socket" "agor-executor@pw$i.service" 2>/dev/null || true
		userdel -r "pw$i" 2>/dev/null || true
	done
	gateway_off >/dev/null
}
check "prewarm: 20 people pre-warm Claude Code at once; the warm agents kept stay within warm_per_host, their memory and the executors' printed" pw_host
check "prewarm: the 20 people and the configuration put back" pw_host_down
