# Upgrade from the previous release (sourced last by checks.sh, after the
# purge): install the package built from the last release before the
# uid-bound store, fill it (a session with events, a person's key, a
# daemon-wide key, a bearer token), upgrade to this tree's package, and find
# everything there and usable.

upgrade_from_previous() {
	if [ ! -f "$T/agor_prev.deb" ]; then
		echo "no previous release package (run.sh could not build $(cat "$T/agor_prev_ref" 2>/dev/null))"; return 1
	fi
	# A host that had only the previous release, which knows no drop-ins:
	# the suite's (not the package's, so the purge before left them) go.
	rm -rf /etc/agor/config.d
	dpkg -i "$T/agor_prev.deb" >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	echo "installed the previous release ($(cat "$T/agor_prev_ref"))"
	printf 'execution:\n  allowed_groups: [agorusers]\napi:\n  tcp_address: 127.0.0.1:8123\n' >/etc/agor/config.yaml
	restart_daemon
	setup_agents
	start_model -bash 'echo before > upgrade.txt' -text 'noted.'
	as alice agorctl prompt alice 'before the upgrade' --mode bypassPermissions >/tmp/up1.out 2>&1 || { cat /tmp/up1.out; return 1; }
	printf 'sk-alice-own-0001\n' | as alice agorctl creds set ANTHROPIC_API_KEY >/dev/null
	local tok sid task n
	tok=$(agorctl api-token new alice)
	sid=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	task=$(as alice agorctl tasks "$sid" --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	n=$(as alice agorctl events "$task" | wc -l)
	# The store's tasks table is made anew by this tree's migration 6 (the
	# status "incomplete", dropped_events): the tasks and their events,
	# which refer to them, must come through it as they were.
	local before usage
	before=$(task_rows "$sid")
	usage=$(task_usage "$sid")
	echo "filled: session $sid, task $task with $n events ($before), alice's key, a daemon-wide key, a bearer token"

	# --force-confold: the operator's config.yaml (changed above) is kept,
	# as answering the conffile question with its default would.
	dpkg --force-confold -i "$T/agor_0.1.1-1_amd64.deb" >/tmp/dpkg.log 2>&1 </dev/null || { cat /tmp/dpkg.log; return 1; }
	want "$(dpkg-query -W -f '${Version}' agor)" 0.1.1-1
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8123) 2>/dev/null && break; sleep 0.1; done
	as alice agorctl sessions --json | grep "$sid" >/dev/null
	# Migration 8 (sessions.environment): a session of the previous release
	# ran on the host and still does.
	if as alice agorctl sessions --json | grep -o "\"id\":\"$sid\"[^}]*" | grep '"environment"'; then
		echo "the upgraded session names an environment"; return 1
	fi
	want "$(as alice agorctl events "$task" | wc -l)" "$n"
	want "$(task_rows "$sid")" "$before"
	# The new configuration key's default applies to the kept config.yaml,
	# and doctor reads the store's room from the upgraded daemon.
	agorctl doctor 2>&1 | grep -E '^(ok|warn) +store-space +/var/lib/agor' || { agorctl doctor 2>&1 | grep store-space; return 1; }
	bearer /v1/sessions "$tok" | grep "$sid" >/dev/null || { echo "the token made before the upgrade no longer works"; bearer /v1/sessions "$tok" | head -n 1; return 1; }
	start_model -bash 'echo after >> upgrade.txt' -text 'noted again.'
	as alice agorctl prompt alice 'after the upgrade' --session "$sid" --mode bypassPermissions >/tmp/up2.out 2>&1 || { cat /tmp/up2.out; return 1; }
	agorctl audit --user alice --action api_key_issued | tail -n 1 | grep user_credential >/dev/null ||
		{ echo "alice's key is not audited as user_credential:"; agorctl audit --user alice --action api_key_issued | tail -n 2; return 1; }
	want "$(cat /home/alice/upgrade.txt | tr '\n' ' ')" "before after "
	# The keys moved from the one shared file to one file per owner: the
	# old file is gone, alice's key (adopted to her uid) and the
	# daemon-wide one each in their own 0600 file, readable as before.
	test ! -e /var/lib/agor/credentials.json || { echo "/var/lib/agor/credentials.json is still there"; return 1; }
	want "$(stat -c '%U %a' "/var/lib/agor/credentials/$(id -u alice)-alice.json")" "agor 600"
	want "$(stat -c '%U %a' /var/lib/agor/credentials/daemon.json)" "agor 600"
	test ! -e /var/lib/agor/credentials/legacy-alice.json || { echo "legacy-alice.json is still there"; return 1; }
	local moved
	moved=$(journalctl -u agor-daemon -o cat | grep 'credentials moved to one file per owner' || true)
	[ -n "$moved" ] || { echo "no journal line says the credentials moved"; journalctl -u agor-daemon -o cat | grep -i cred | tail -n 5; return 1; }
	tail -n 1 <<<"$moved"
	# The network section is new: a configuration without it leaves
	# everyone open (no namespace), and the upgraded socket unit makes the
	# egress socket beside the API's.
	test -S /run/agor/egress.sock || { echo "no /run/agor/egress.sock"; ls -l /run/agor; return 1; }
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" no
	local ex
	ex=$(agorctl executors --json)
	grep -q '"mode":"open"' <<<"$ex" || { echo "no executor in mode open: $ex"; return 1; }
	echo "after the upgrade: the session and its $n events, alice's own key (issued as user_credential, now in her own file), the bearer token, and a follow-up in the same session all work; everyone's network stays open, the egress socket is there"
	upgrade_gateway_on "$sid" "$before" "$usage"
}

# upgrade_gateway_on SESSION ROWS: the kept config.yaml has no gateway
# key, so the upgraded host hands keys out as before; the operator turns
# the gateway on. alice's executor still runs the previous release's
# binary (idle): the daemon replaces it, and her next prompt reaches the
# stand-in with the key she stored before the upgrade, which none of her
# processes holds; the ledger has the request; her tasks are as they were.
upgrade_gateway_on() {
	local pid t0 keys rows
	pid=$(systemctl show -p MainPID --value agor-executor@alice.service)
	[ "$pid" -gt 0 ] || { echo "alice's executor is not running before the gateway is turned on"; return 1; }
	grep -q '^gateway:' /etc/agor/config.yaml && { echo "the kept config.yaml names the gateway"; return 1; }
	agorctl doctor 2>&1 | grep -E '^warn +gateway +model gateway off' >/dev/null || { agorctl doctor 2>&1 | grep gateway; return 1; }
	printf 'gateway:\n  enabled: true\n  upstreams: {anthropic: "http://127.0.0.1:18080"}\n' >>/etc/agor/config.yaml
	restart_daemon
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8123) 2>/dev/null && break; sleep 0.1; done
	t0=$(date +%s.%N)
	start_model -bash 'echo gateway >> upgrade.txt' -text 'noted through the gateway.'
	as alice agorctl prompt alice 'with the gateway' --session "$1" --mode bypassPermissions >/tmp/up3.out 2>&1 || { cat /tmp/up3.out; return 1; }
	want "$(tail -n 1 /home/alice/upgrade.txt)" gateway
	[ "$(systemctl show -p MainPID --value agor-executor@alice.service)" != "$pid" ] || { echo "alice's old executor (pid $pid) was not replaced"; return 1; }
	journalctl -u agor-daemon -o cat --since "@${t0%.*}" | grep 'executor replaced by the installed version' >/dev/null ||
		{ echo "no journal line says the old executor was replaced"; journalctl -u agor-daemon -o cat --since "@${t0%.*}" | tail -n 5; return 1; }
	keys=$(python3 -c 'import json, urllib.request
print(" ".join(sorted({r["key"] for r in json.load(urllib.request.urlopen("http://127.0.0.1:18080/stand-in/requests")) or []})))')
	want "$keys" sk-alice-own-0001
	local p
	for p in $(pgrep -u alice); do
		if grep -qa sk-alice-own "/proc/$p/environ" 2>/dev/null; then echo "alice's process $p holds her key"; return 1; fi
	done
	if grep -rqs sk-alice-own /home/alice; then echo "a file of alice's holds her key"; return 1; fi
	rows=$(agorctl usage --user alice --since "$(date -d "@$t0" +%Y-%m-%dT%H:%M:%S.%N%:z)" --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["rows"]))')
	[ "$rows" -ge 1 ] || { echo "no ledger row for alice's prompt through the gateway"; return 1; }
	[ -n "$3" ] || { echo "the previous release showed no token usage for the task"; return 1; }
	want "$(task_usage "$1" | head -n "$(wc -l <<<"$3")")" "$3"
	local now w
	now=$(task_rows "$1")
	for w in $2; do
		case " $now " in *" $w "*) ;; *) echo "the tasks from before the upgrade changed ($w): $now"; return 1 ;; esac
	done
	echo "gateway turned on after the upgrade: alice's idle executor on the old binary (pid $pid) replaced, her stored key on $rows ledger row(s) of the stand-in's requests and in none of her processes or files; her earlier tasks and their token usage unchanged ($(head -n 1 <<<"$3"))"
}
# task_usage is the token usage each task of session $1 reported, oldest
# first: the usage a release before the gateway kept.
task_usage() {
	as alice agorctl tasks "$1" --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
tasks = d["tasks"] if isinstance(d, dict) else d
for t in sorted(tasks, key=lambda t: t.get("created_at", "")):
    print(t["id"], json.dumps((t.get("result") or {}).get("token_usage"), sort_keys=True))'
}
# task_rows is each task of session $1 as id, status and end time.
task_rows() {
	as alice agorctl tasks "$1" --json | grep -o '"id":"[0-9a-f]*"\|"status":"[a-z]*"\|"ended_at":"[^"]*"' | tr '\n' ' '
}

name="upgrade from the previous release: sessions, events, keys and bearer tokens all still there and usable"
if [ -f "$T/agor_prev.deb" ]; then
	check "$name" upgrade_from_previous
else # a clone without the release's commit (shallow) cannot build it
	skip "$name" "no package of the previous release ($(cat "$T/agor_prev_ref")): its commit is not in this clone's history"
fi

# The first release with the model gateway (agor_gw.deb), filled under
# the gateway (alice's own key, a prompt through it, its ledger rows and a
# budget), upgraded to this tree with its config.yaml kept: the ledger
# reads the same, the budget still counts it, and alice's next prompt
# reaches the stand-in with the key she stored before, which none of her
# processes or files holds.
upgrade_from_gateway_release() {
	local sid until before after keys p rows
	dpkg -P agor >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	dpkg -i "$T/agor_gw.deb" >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	echo "installed the gateway's first release ($(cat "$T/agor_gw_ref"), $(dpkg-query -W -f '${Version}' agor))"
	printf '%s\n' 'execution:' '  allowed_groups: [agorusers]' 'gateway:' '  enabled: true' \
		'  upstreams: {anthropic: "http://127.0.0.1:18080"}' '  prices: {claude-standin: {input: 10000, output: 20000}}' \
		'  budgets:' '    users:' '      alice: {month_tokens: 100000000}' >/etc/agor/config.yaml
	restart_daemon || { journalctl -u agor-daemon -o cat --no-pager | tail -n 20; return 1; }
	setup_agents
	printf 'sk-alice-gw-0002\n' | as alice agorctl creds set ANTHROPIC_API_KEY >/dev/null
	start_model -bash 'echo one > gw-upgrade.txt' -text 'noted.'
	as alice agorctl prompt alice 'before the upgrade' --mode bypassPermissions --model claude-standin >/tmp/gw1.out 2>&1 || { cat /tmp/gw1.out; return 1; }
	want "$(standin_keys)" sk-alice-gw-0002
	sid=$(as alice agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	until=$(date +%Y-%m-%dT%H:%M:%S.%N%:z)
	before=$(ledger_rows "$until")
	[ -n "$before" ] || { echo "the gateway's release wrote no ledger row"; return 1; }
	echo "filled: $(ledger_requests "$until") request(s) in alice's ledger, her own key, a month's token budget"

	dpkg --force-confold -i "$T/agor_0.1.1-1_amd64.deb" >/tmp/dpkg.log 2>&1 </dev/null || { cat /tmp/dpkg.log; return 1; }
	want "$(dpkg-query -W -f '${Version}' agor)" 0.1.1-1
	for _ in $(seq 50); do [ -S /run/agor/daemon.sock ] && agorctl usage >/dev/null 2>&1 && break; sleep 0.1; done
	after=$(ledger_rows "$until")
	want "$after" "$before"
	agorctl usage --user alice | grep -E '^alice: month tokens [0-9]+ of 100000000' || { agorctl usage --user alice; return 1; }
	start_model -bash 'echo two >> gw-upgrade.txt' -text 'noted again.'
	as alice agorctl prompt alice 'after the upgrade' --session "$sid" --mode bypassPermissions --model claude-standin >/tmp/gw2.out 2>&1 || { cat /tmp/gw2.out; return 1; }
	want "$(tr '\n' ' ' </home/alice/gw-upgrade.txt)" "one two "
	keys=$(standin_keys)
	want "$keys" sk-alice-gw-0002
	for p in $(pgrep -u alice); do
		if grep -qa sk-alice-gw "/proc/$p/environ" 2>/dev/null; then echo "alice's process $p holds her key"; return 1; fi
	done
	if grep -rqs sk-alice-gw /home/alice; then echo "a file of alice's holds her key"; return 1; fi
	rows=$(ledger_requests "$(date +%Y-%m-%dT%H:%M:%S.%N%:z)")
	[ "$rows" -gt "$(ledger_requests "$until")" ] || { echo "no new ledger row after the upgrade ($rows requests)"; return 1; }
	echo "after the upgrade: alice's ledger reads the same ($before), the budget counts them, and alice's next prompt went through the gateway with her stored key (the stand-in saw $keys; none of her processes or files hold it): $rows requests in all"
}
# ledger_requests UNTIL: alice's requests this month up to UNTIL.
ledger_requests() { ledger_rows "$1" | awk '{n += $3} END {print n + 0}'; }
# standin_keys: the keys the stand-in on 18080 saw, one line each.
standin_keys() {
	python3 -c 'import json, urllib.request
print("\n".join(sorted({r["key"] for r in json.load(urllib.request.urlopen("http://127.0.0.1:18080/stand-in/requests")) or []})))'
}
# ledger_rows UNTIL: alice's ledger this month up to UNTIL, a line per
# model: its requests, the four token counts and their cost.
ledger_rows() {
	agorctl usage --user alice --since "$(date +%Y-%m-01)" --until "$1" --json | python3 -c 'import json, sys
keys = ("user", "model", "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost")
for r in json.load(sys.stdin)["rows"]:
    print(" ".join(str(r.get(k)) for k in keys))'
}

name="upgrade from the gateway's first release: its ledger, budget and keys intact, the next prompt through the gateway"
if [ -f "$T/agor_gw.deb" ]; then
	check "$name" upgrade_from_gateway_release
else
	skip "$name" "no package of the gateway's first release ($(cat "$T/agor_gw_ref")): its commit is not in this clone's history"
fi
