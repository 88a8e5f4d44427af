# Upgrade from the previous release (sourced last by checks.sh, after the
# purge): install the package built from the last release before the
# uid-bound store, fill it (a session with events, a person's key, a
# daemon-wide key, a bearer token), upgrade to this tree's package, and find
# everything there and usable.

upgrade_from_previous() {
	if [ ! -f "$T/agor_prev.deb" ]; then
		echo "no previous release package (run.sh could not build $(cat "$T/prev_ref" 2>/dev/null))"; return 1
	fi
	dpkg -i "$T/agor_prev.deb" >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; return 1; }
	echo "installed the previous release ($(cat "$T/prev_ref"))"
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
	local before
	before=$(task_rows "$sid")
	echo "filled: session $sid, task $task with $n events ($before), alice's key, a daemon-wide key, a bearer token"

	# --force-confold: the operator's config.yaml (changed above) is kept,
	# as answering the conffile question with its default would.
	dpkg --force-confold -i "$T/agor_0.1.1-1_amd64.deb" >/tmp/dpkg.log 2>&1 </dev/null || { cat /tmp/dpkg.log; return 1; }
	want "$(dpkg-query -W -f '${Version}' agor)" 0.1.1-1
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8123) 2>/dev/null && break; sleep 0.1; done
	as alice agorctl sessions --json | grep "$sid" >/dev/null
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
}
# task_rows is each task of session $1 as id, status and end time.
task_rows() {
	as alice agorctl tasks "$1" --json | grep -o '"id":"[0-9a-f]*"\|"status":"[a-z]*"\|"ended_at":"[^"]*"' | tr '\n' ' '
}

name="upgrade from the previous release: sessions, events, keys and bearer tokens all still there and usable"
if [ -f "$T/agor_prev.deb" ]; then
	check "$name" upgrade_from_previous
else # a clone without the release's commit (shallow) cannot build it
	skip "$name" "no package of the previous release ($(cat "$T/prev_ref")): its commit is not in this clone's history"
fi
