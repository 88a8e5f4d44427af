# A full disk under the shipped unit (sourced by checks.sh; uses lib.sh,
# after install): the daemon's StateDirectory on a small tmpfs, filled by
# one prompt's flood. The person is told their task is incomplete, new
# prompts are refused with storage_full naming /var/lib/agor while reads
# go on, the journal warns once, doctor and /v1/metrics say so; once the
# filesystem grows it all resumes by itself and nothing is left running,
# nor after a restart.

# fulldisk_agent: a stand-in Claude Code whose "flood" turn prints 40
# messages of 200 KB (each its own, so no raw line is kept once for all).
fulldisk_agent() {
	local d=/usr/local/share/agor-fulldisk i
	mkdir -p "$d"
	for i in $(seq -w 1 40); do
		printf '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%s%s"}]}}\n' \
			"$i" "$(head -c 204800 /dev/zero | tr '\0' x)" >"$d/line$i"
	done
	cat >/usr/local/bin/agor-fulldisk-claude <<SH
#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"full-1"}'
case "\$turn" in *flood*) cat $d/line* ;; esac
echo '{"type":"result","subtype":"success","session_id":"full-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r l; do :; done
SH
	chmod 755 /usr/local/bin/agor-fulldisk-claude
}

# fulldisk_none_running: no session of alice's is left running.
fulldisk_none_running() {
	if as alice agorctl sessions --json | grep -o '"status":"[a-z]*"' | grep -E '"(running|queued)"'; then
		echo "sessions left running:"; as alice agorctl sessions; return 1
	fi
}

fulldisk_episodes() { journalctl -u agor-daemon --since "$1" -o cat | grep -c 'store cannot write' || true; }
# fulldisk_one_episode SINCE: exactly one warning since SINCE, or what the
# journal holds (its oldest entry, its size) to tell a lost line from none.
fulldisk_one_episode() {
	local n
	n=$(fulldisk_episodes "$1")
	[ "$n" = 1 ] && return 0
	echo "$n journal warnings that the store cannot write since $1, want 1; the journal: $(journalctl --disk-usage 2>&1), the root filesystem: $(df -h --output=size,avail / | tail -n 1)"
	journalctl --no-pager -o short-iso 2>/dev/null | head -n 2 | cut -c1-100
	journalctl -u systemd-journald -o cat --no-pager | tail -n 3
	journalctl -u agor-daemon --since "$1" -o cat | grep -i 'store\|full' | cut -c1-200 | tail -n 5
	return 1
}

fulldisk() {
	local small=/run/agor-small used since out rc=0 m sid
	fulldisk_agent
	rm -f /tmp/agents.yaml.fulldisk
	[ ! -f /etc/agor/agents.yaml ] || cp /etc/agor/agents.yaml /tmp/agents.yaml.fulldisk
	printf 'sk-ant-suite-0123456789\n' | agorctl creds set ANTHROPIC_API_KEY --daemon >/dev/null
	printf 'claude-code:\n  binary: /usr/local/bin/agor-fulldisk-claude\n' >/etc/agor/agents.yaml
	# Headroom of 8 MiB: events stop at 4 MiB free, so the task's end
	# still fits; new prompts are refused below 8 MiB.
	set_dropin 50-fulldisk 'store: {min_free_bytes: 8388608}'
	workspace alice fd # the prompts' workspace (the packaged sandbox.prompts)
	systemctl stop agor-daemon.service agor-executor@alice.service
	used=$(du -sk /var/lib/agor | cut -f1)
	mkdir -p "$small"
	# Whatever fails below, the state goes back to the real directory.
	trap fulldisk_undo EXIT
	mount -t tmpfs -o "size=$((used + 14336))k,mode=0750" tmpfs "$small"
	chown agor:agor "$small"
	cp -a /var/lib/agor/. "$small/"
	mount --bind "$small" /var/lib/agor
	echo "state directory on a tmpfs of $((used / 1024 + 14)) MiB ($((used / 1024)) MiB in use)"
	since=$(date '+%Y-%m-%d %H:%M:%S')
	restart_daemon

	out=$(as alice agorctl prompt alice 'flood' --mode bypassPermissions --cwd fd 2>&1 </dev/null) && { echo "the flood's prompt exited 0"; rc=1; }
	sid=$(grep -o 'session [0-9a-f]*$' <<<"$out" | cut -d' ' -f2)
	echo "alice's flood: $(grep -E '^(incomplete|completed) ·' <<<"$out" | cut -c1-60); $(grep -o 'warning: [0-9]* of the agent.s events were not stored[^;]*' <<<"$out")"
	grep -qE '^incomplete · 40 messages' <<<"$out" || { echo "no 'incomplete · 40 messages'"; rc=1; }
	grep -q "the daemon's state directory /var/lib/agor is full" <<<"$out" || { echo "no warning naming /var/lib/agor"; rc=1; }
	out=$(as alice agorctl prompt alice 'small' --mode bypassPermissions --cwd fd 2>&1 </dev/null) && { echo "a prompt on the full store was served"; rc=1; }
	echo "the next prompt: $(tail -n 1 <<<"$out" | cut -c1-160)"
	grep -q 'storage_full' <<<"$out" && grep -q '/var/lib/agor' <<<"$out" || rc=1
	as alice agorctl sessions >/dev/null || { echo "sessions not readable while full"; rc=1; }
	out=$(agorctl doctor 2>&1 || true)
	grep -E '^FAIL +store-space' <<<"$out" || { echo "doctor: $(grep store-space <<<"$out")"; rc=1; }
	m=$("$T/daemonbench" -get /v1/metrics | grep -E '^agor_store_(full|full_episodes_total|free_bytes)\{' | tr '\n' ' ')
	echo "metrics: $m"
	grep -q 'agor_store_full{state_dir="/var/lib/agor"} 1' <<<"$m" || rc=1
	fulldisk_one_episode "$since" || rc=1

	# Grown by 256 MiB, whatever the run has stored so far (a full run's
	# store passed 256 MiB once the pre-warm concern came in, and a
	# fixed 256m was then a shrink the kernel refused).
	mount -o remount,size=$((used + 262144))k "$small"
	for _ in $(seq 100); do agorctl doctor 2>&1 | grep -qE '^ok +store-space' && break; sleep 0.2; done
	agorctl doctor 2>&1 | grep -E '^(ok|FAIL) +store-space' || rc=1
	out=$(as alice agorctl prompt alice 'small' --mode bypassPermissions --cwd fd 2>&1 </dev/null) || { echo "after growing: $out"; rc=1; }
	echo "after growing by 256 MiB: $(grep -E ' · ' <<<"$out" | cut -c1-40)"
	fulldisk_none_running || rc=1
	restart_daemon
	fulldisk_none_running || rc=1
	out=$(as alice agorctl tasks "$sid" --json)
	echo "after a restart, the flood's task in session $sid: $(grep -o '"status":"[a-z]*"\|"dropped_events":[0-9]*' <<<"$out" | tr '\n' ' ')"
	grep -q '"status":"incomplete"' <<<"$out" && grep -q '"dropped_events":[1-9]' <<<"$out" || rc=1
	fulldisk_one_episode "$since" || rc=1
	fulldisk_undo
	return $rc
}

# fulldisk_undo puts the state back on the real directory, and the
# configuration and agents as they were.
fulldisk_undo() {
	trap - EXIT
	systemctl stop agor-daemon.service agor-executor@alice.service
	if mountpoint -q /var/lib/agor; then
		umount /var/lib/agor
		cp -a /run/agor-small/. /var/lib/agor/
	fi
	! mountpoint -q /run/agor-small || umount /run/agor-small
	if [ -f /tmp/agents.yaml.fulldisk ]; then cp /tmp/agents.yaml.fulldisk /etc/agor/agents.yaml; else rm -f /etc/agor/agents.yaml; fi
	drop_dropin 50-fulldisk
	restart_daemon
}
check "full disk: the StateDirectory on a small tmpfs filled by a flood: the prompt says incomplete with a warning naming /var/lib/agor and exits 1, the next is refused storage_full while reads go on, one journal warning, doctor FAIL and agor_store_full 1; grown, prompts run and nothing is left running, nor after a restart" fulldisk
