# Account reuse (sourced by checks.sh after identity.sh): everything stored
# for a person is bound to uid and name, so a new account that gets a
# deleted account's name inherits nothing.

account_reuse() {
	tcp_api
	userdel -r dora >/dev/null 2>&1 || true
	useradd --create-home --uid 4101 --groups agorusers dora
	start_model -bash 'echo old-dora > mine.txt' -text 'done.'
	workspace dora p # each dora's prompts in a project of hers (the packaged sandbox.prompts)
	as dora agorctl prompt dora 'remember this' --mode bypassPermissions --cwd p >/tmp/dora.out 2>&1 || { cat /tmp/dora.out; return 1; }
	printf 'sk-dora-old-0001\n' | as dora agorctl creds set ANTHROPIC_API_KEY >/dev/null
	local tok sid task
	tok=$(agorctl api-token new dora)
	sid=$(as dora agorctl sessions --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	task=$(as dora agorctl tasks "$sid" --json | grep -o '"id":"[0-9a-f]*"' | tail -n 1 | cut -d'"' -f4)
	bearer /v1/sessions "$tok" | grep "$sid" >/dev/null || { echo "old dora's token does not work"; return 1; }
	echo "old dora (uid 4101): session $sid, task $task, a key, a bearer token"

	systemctl stop agor-executor@dora.socket agor-executor@dora.service
	userdel -r dora
	useradd --create-home --uid 4102 --groups agorusers dora
	sleep 11 # the daemon's answers about an account live 10 s
	local out
	if as dora agorctl sessions --json | grep "$sid" >/dev/null; then echo "new dora lists the old session"; return 1; fi
	if out=$(as dora agorctl tasks "$sid" 2>&1); then echo "new dora lists the old tasks: $out"; return 1; fi
	if out=$(as dora agorctl events "$task" 2>&1); then echo "new dora reads the old events: $out"; return 1; fi
	echo "new dora: events of the old task -> $out"
	out=$(bearer /v1/sessions "$tok" | head -n 1)
	echo "old token for the new dora: $out"
	echo "$out" | grep -E ' (401|403) ' >/dev/null
	# Her prompt must not get the old dora's key: with none of her own, the
	# gateway puts the daemon-wide one on (what the stand-in saw), the
	# audit trail says which, and that the old dora's key was left alone.
	start_model -bash 'true' -text 'ok.'
	workspace dora p
	as dora agorctl prompt dora 'hello' --mode bypassPermissions --cwd p >/tmp/dora2.out 2>&1 || { cat /tmp/dora2.out; return 1; }
	want "$(standin_requests | cut -d' ' -f1 | sort -u)" sk-ant-suite-0123456789
	agorctl audit --user dora --action api_key_issued | tail -n 1 | tee /dev/stderr | grep daemon_credential >/dev/null
	agorctl audit --action account_mismatch | grep dora | grep '"credential":"ANTHROPIC_API_KEY"' | grep '"stored_uid":4101' >/dev/null ||
		{ echo "the old dora's key left alone, not audited:"; agorctl audit --action account_mismatch | grep dora; return 1; }
	echo "audit: $(agorctl audit --action account_mismatch | grep -c dora) account_mismatch records for dora, one her old key"
}
check "account reuse: a new dora (another uid) sees none of the old dora's sessions, tasks, events, key or token; refusals audited" account_reuse

orphans() {
	local out
	out=$(agorctl accounts orphans)
	echo "$out" | grep dora | head -n 3
	echo "$out" | grep 4101 >/dev/null
	agorctl accounts purge dora --uid 4101 >/dev/null
	if agorctl accounts orphans | grep 4101 >/dev/null; then echo "dora (4101) still there after purge"; return 1; fi
	echo "purged what belonged to dora (uid 4101)"
}
check "agorctl accounts orphans lists what belongs to gone accounts; purge removes it" orphans
