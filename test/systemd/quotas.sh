# Quotas and retention through the real daemon (sourced by checks.sh after
# daemon; uses lib.sh). One person's flood stops at their quota with an
# error naming it, another person is unaffected, keys sit in one file per
# owner, and the retention sweep runs on its schedule and says so.

# quota_config SESSIONS KEYS: config.d/50-quotas.yaml over the base.
quota_config() {
	reconfigure 50-quotas "$(printf 'quotas:\n  max_sessions_per_user: %s\n  max_credentials_per_user: %s\n  max_prompt_bytes: 4096\nretention:\n  sweep_interval_s: 1\n' "$1" "$2")"
}
# quota_ws: the prompts here run in ~/q (the packaged sandbox.prompts:
# workspace refuses one at the home before it is a session).
quota_ws() { workspace alice q && workspace bob q; }
sessions_of() { as "$1" agorctl sessions --json | { grep -o '"id":"[0-9a-f]*"' || true; } | wc -l; }
keys_of() { # the keys in a person's own file (0: none)
	local f
	f=/var/lib/agor/credentials/$(id -u "$1")-$1.json
	if [ -f "$f" ]; then { grep -o "\"$1:[0-9]*/[A-Z0-9_]*\"" "$f" || true; } | wc -l; else echo 0; fi
}

quota_sessions() {
	local n0 out i
	quota_ws
	n0=$(sessions_of alice)
	quota_config $((n0 + 2)) 64
	for i in 1 2; do as alice agorctl prompt alice "hello $i" --cwd q >/dev/null 2>&1 || true; done
	for i in 1 2 3 4 5; do
		if out=$(as alice agorctl prompt alice "one too many $i" --cwd q 2>&1); then echo "a session past the quota: $out"; return 1; fi
	done
	echo "alice past her quota: $out"
	echo "$out" | grep "quotas.max_sessions_per_user is $((n0 + 2))" >/dev/null
	want "$(sessions_of alice)" $((n0 + 2))
	local b0
	b0=$(sessions_of bob)
	out=$(as bob agorctl prompt bob 'hello from bob' --cwd q 2>&1) || true
	if echo "$out" | grep quotas >/dev/null; then echo "bob refused: $out"; return 1; fi
	want "$(sessions_of bob)" $((b0 + 1))
	out=$(as bob agorctl prompt bob "$(head -c 5000 /dev/zero | tr '\0' x)" --cwd q 2>&1) && { echo "a 5000-byte prompt taken"; return 1; }
	echo "bob's 5000-byte prompt: $out"
	echo "$out" | grep "quotas.max_prompt_bytes is 4096" >/dev/null
	want "$(sessions_of bob)" $((b0 + 1))
}
check "quotas: alice's prompts past max_sessions_per_user are refused naming the limit and nothing more is stored; bob still works; a prompt past max_prompt_bytes is refused" quota_sessions

quota_credentials() {
	local k0 out i before
	k0=$(keys_of alice)
	quota_config 1000 $((k0 + 3))
	for i in 1 2 3; do printf 'sk-q-%s\n' "$i" | as alice agorctl creds set "QUOTA_KEY_$i" >/dev/null; done
	if out=$(printf 'sk-q-4\n' | as alice agorctl creds set QUOTA_KEY_4 2>&1); then echo "a key past the quota: $out"; return 1; fi
	echo "alice's fourth key: $out"
	echo "$out" | grep "quotas.max_credentials_per_user is $((k0 + 3))" >/dev/null
	want "$(keys_of alice)" $((k0 + 3))
	printf 'sk-q-1b\n' | as alice agorctl creds set QUOTA_KEY_1 >/dev/null # replacing is not one more
	local f=/var/lib/agor/credentials/$(id -u alice)-alice.json
	want "$(stat -c '%U %a' "$f")" "agor 600"
	before=$(stat -c %Y.%i "$f")
	sleep 1.1
	local b0
	b0=$(keys_of bob)
	for i in 1 2; do printf 'sk-bob-%s\n' "$i" | as bob agorctl creds set "BOB_KEY_$i" >/dev/null; done
	want "$(stat -c %Y.%i "$f")" "$before" # bob's writes never touched alice's file
	want "$(keys_of bob)" $((b0 + 2))
	if grep -r sk-q- /var/lib/agor/credentials >/dev/null; then echo "a key in clear"; return 1; fi
	for i in 1 2; do as bob agorctl creds delete "BOB_KEY_$i" >/dev/null; done
	for i in 1 2 3; do as alice agorctl creds delete "QUOTA_KEY_$i" >/dev/null; done
}
check "quotas: alice's keys past max_credentials_per_user are refused naming the limit; each person's keys in their own 0600 file, bob's writes leave alice's untouched" quota_credentials

# alice's agent floods events: past quotas.max_event_bytes_per_task her
# task gets an error event naming the limit and is stopped, the daemon
# stays small, and bob's prompt is served beside it.
quota_event_flood() {
	local line=/usr/local/share/agor-flood-line
	printf '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"%s"}]}}\n' "$(head -c 32768 /dev/zero | tr '\0' x)" >"$line"
	cat >/usr/local/bin/agor-flood-claude <<SH
#!/bin/sh
read -r init; read -r turn
echo '{"type":"system","subtype":"init","session_id":"flood-1"}'
case "\$turn" in *small*) n=1 ;; *) n=400 ;; esac
i=0; while [ \$i -lt \$n ]; do cat $line; sleep 0.01; i=\$((i+1)); done
echo '{"type":"result","subtype":"success","session_id":"flood-1","usage":{"input_tokens":1,"output_tokens":1}}'
while read -r l; do :; done
SH
	chmod 755 /usr/local/bin/agor-flood-claude
	cp /etc/agor/agents.yaml /tmp/agents.yaml.orig
	printf 'claude-code:\n  binary: /usr/local/bin/agor-flood-claude\n' >/etc/agor/agents.yaml
	reconfigure 50-quotas 'quotas: {max_event_bytes_per_task: 262144}'
	quota_ws
	systemctl stop agor-executor@alice.service agor-executor@bob.service # read agents.yaml afresh; the sockets stay
	local out rc=0 rss
	out=$(as alice agorctl prompt alice 'flood' --mode bypassPermissions --cwd q 2>&1 </dev/null) && { echo "the flood completed: $(tail -n 2 <<<"$out")"; rc=1; }
	echo "alice: $(grep -o 'quotas.max_event_bytes_per_task[^"]*' <<<"$out" | head -n 1); $(tail -n 1 <<<"$out" | cut -c1-100)"
	grep -q 'quotas.max_event_bytes_per_task' <<<"$out" || rc=1
	out=$(as bob agorctl prompt bob 'small' --mode bypassPermissions --cwd q 2>&1 </dev/null) || { echo "bob: $out"; rc=1; }
	echo "bob: $(tail -n 1 <<<"$out" | cut -c1-80)"
	rss=$(awk '/VmHWM/ {print $2}' /proc/"$(systemctl show -p MainPID --value agor-daemon.service)"/status)
	echo "agor-daemon peak RSS $((rss / 1024)) MiB"
	cp /tmp/agents.yaml.orig /etc/agor/agents.yaml
	systemctl stop agor-executor@alice.service agor-executor@bob.service # read agents.yaml afresh; the sockets stay
	return $rc
}
check "quotas: alice's event flood stops at max_event_bytes_per_task, named in her prompt's output; bob's prompt is served beside it" quota_event_flood

retention_sweeps() {
	local since
	since=$(date '+%Y-%m-%d %H:%M:%S')
	quota_config 1000 64
	for _ in $(seq 50); do
		journalctl -u agor-daemon --since "$since" -o cat | grep 'store swept' >/dev/null && break
		sleep 0.2
	done
	# Each sweep is one journal entry with its numbers as fields.
	journalctl -u agor-daemon --since "$since" MESSAGE='store swept' -o json --no-pager | tail -n 1 |
		grep -o '"AGOR_[A-Z_]*":"[^"]*"' | paste -sd' '
	test -n "$(journalctl -u agor-daemon --since "$since" MESSAGE='store swept' -o json --no-pager | grep '"AGOR_BYTES_AFTER":"[0-9]*"')"
	reconfigure 50-quotas # the last of the concern: the base again
}
check "retention: the daemon sweeps the store on its schedule and logs what it removed and the store's size" retention_sweeps
