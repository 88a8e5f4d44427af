# Identity checks (sourced by checks.sh after the prompt checks: uses check,
# as, want, api, no_units, start_model, setup_agents, pane, wait_pane).
# Directory accounts come from the container's OpenLDAP through nslcd (NSS)
# and systemd-userdbd; none of them is in /etc/passwd.

directory_visible() {
	want "$(getent passwd ada.lovelace | cut -d: -f3)" 20001
	want "$(grep -c '^ada.lovelace:' /etc/passwd || true)" 0
	id ada.lovelace | grep '(ldapagents)' >/dev/null
	userdbctl user ada.lovelace | grep 20001 >/dev/null
	echo "ada.lovelace (uid 20001, in ldapagents) comes from the directory: getent and userdbctl see her, /etc/passwd does not"
}
check "directory: OpenLDAP accounts visible through NSS (nslcd) and systemd-userdbd, not in /etc/passwd" directory_visible

identity_bench() {
	local u src
	for src in userdb nss; do
		for u in alice ada.lovelace; do
			echo "# $src, $u ($( [ "$u" = alice ] && echo files || echo directory) user)"
			AGOR_BENCH_SOURCE=$src AGOR_BENCH_USER=$u "$T/identity.test" -test.run '^$' -test.bench Lookup -test.benchtime 200x |
				grep -E '^Benchmark' | awk '{printf "  %-28s %10.1f us\n", $1, $3 / 1000}'
		done
	done
}
check "identity lookup cost: name->uid and uid->name, cold and cached, files and directory user, userdb and NSS" identity_bench

# The directory group joins the allowed groups for the rest of the file
# (config.d/50-identity.yaml, dropped by its last check).
allow_directory() {
	drop_dropin 60-identity
	reconfigure 50-identity 'execution: {allowed_groups: [agorusers, ldapagents]}'
}

directory_prompt() {
	allow_directory # agents.yaml and the key are the prompt checks'
	start_model -bash 'id -un > whoami.txt; pwd' -text 'I wrote whoami.txt.'
	workspace ada.lovelace p
	rm -f /home/ada.lovelace/p/whoami.txt
	local out
	out=$(as ada.lovelace agorctl prompt ada.lovelace 'who runs this?' --mode bypassPermissions --cwd p 2>&1)
	echo "$out" | sed -n '1,3p;$p'
	echo "$out" | grep '^completed' >/dev/null
	want "$(cat /home/ada.lovelace/p/whoami.txt)" ada.lovelace
	want "$(stat -c '%U %u' /home/ada.lovelace/p/whoami.txt)" "ada.lovelace 20001"
	want "$(systemctl show -p User --value agor-executor@ada.lovelace.service)" ada.lovelace
	journalctl -u agor-executor@ada.lovelace.service AGOR_USER=ada.lovelace -o cat --no-pager | grep serving >/dev/null
	echo "journalctl -u agor-executor@ada.lovelace.service AGOR_USER=ada.lovelace: $(journalctl -u agor-executor@ada.lovelace.service AGOR_USER=ada.lovelace -o cat --no-pager | wc -l) lines"
}
check "as directory user ada.lovelace: agorctl prompt runs the real Claude Code in her executor, files hers, journal finds her lines" directory_prompt

directory_terminal() {
	# From her home, as she would: outside it, a terminal she asks for as
	# herself is refused (cd into a project, or --cwd: agorctl terminal --help).
	in_tmux "cd /home/ada.lovelace && setpriv --reuid=ada.lovelace --regid=ada.lovelace --init-groups agorctl terminal"
	wait_pane 'ada.lovelace@'
	tmux send-keys -t agorterm 'id -un; id -gn' Enter
	wait_pane '^ada.lovelace$'
	tmux send-keys -t agorterm 'exit 3' Enter
	wait_pane 'agorctl-exit=3'
	pane | grep -v '^$' | tail -n 4
	tmux kill-server
}
check "as ada.lovelace, agorctl terminal in tmux: id -un shows ada.lovelace" directory_terminal

directory_refused() {
	local out
	if out=$(api executors start grace.hopper 2>&1); then echo "grace.hopper was started: $out"; return 1; fi
	echo "root for grace.hopper: $out"
	echo "$out" | grep user_not_allowed >/dev/null
	# --cwd: a workspace of hers (made or not), so that the refusal is
	# for who she is, not for a prompt at her home (sandbox.prompts).
	if out=$(as grace.hopper agorctl prompt grace.hopper hello --cwd p 2>&1 </dev/null); then echo "grace.hopper prompted: $out"; return 1; fi
	echo "grace.hopper herself: $out"
	no_units 'agor-executor@grace.hopper*'
}
check "a directory user outside the allowed groups is refused with a clear error; no unit started" directory_refused

escaped_names() {
	id mary-jane >/dev/null 2>&1 || useradd --create-home --groups agorusers mary-jane
	want "$(agorctl exec mary-jane -- id -un)" mary-jane
	want "$(systemctl is-active 'agor-executor@mary\x2djane.service')" active
	test -S '/run/agor/executors/mary\x2djane.sock'
	systemctl list-units --plain --no-legend 'agor-executor@mary*' | sed 's/^/  /'
}
check "a name systemd escapes (mary-jane): unit agor-executor@mary\\x2djane, User=%I gives mary-jane back" escaped_names

min_uid_unit() {
	# As root, outside the daemon: what a compromised agor account could do.
	systemctl start agor-executor@daemon.socket
	local out start end
	start=$(date +%s%N)
	if out=$(agorctl executors ping --socket /run/agor/executors/daemon.sock --timeout 10s 2>&1); then
		echo "the executor served the daemon account: $out"; return 1
	fi
	end=$(date +%s%N)
	echo "ping: $out (refused after $(( (end - start) / 1000000 )) ms)"
	for _ in $(seq 50); do [ "$(systemctl is-active agor-executor@daemon.service)" = failed ] && break; sleep 0.1; done
	want "$(systemctl is-active agor-executor@daemon.service)" failed
	want "$(systemctl show -p ExecMainStatus --value agor-executor@daemon.service)" 78
	want "$(systemctl show -p NRestarts --value agor-executor@daemon.service)" 0
	journalctl -u agor-executor@daemon.service -o cat --no-pager | grep 'refusing to serve' | tail -n 1
	journalctl -u agor-executor@daemon.service -o cat --no-pager | grep 'below min_uid' >/dev/null
	systemctl stop agor-executor@daemon.socket
	systemctl reset-failed agor-executor@daemon.service
}
check "systemctl start agor-executor@daemon.socket as root, then a connect: refused at once, exit 78 not restarted, the journal says why" min_uid_unit

special_accounts() {
	local out
	# nobody listed by name and above min_uid: only the special-account rule refuses it
	reconfigure 60-identity 'execution: {allowed_users: [nobody, alice]}'
	trap 'reconfigure 60-identity >/dev/null 2>&1' EXIT # the base again however the check ends (its subshell's exit)
	if out=$(api executors start nobody 2>&1); then echo "the daemon started nobody's executor: $out"; return 1; fi
	echo "agorctl executors start nobody (uid $(id -u nobody)): $out"
	echo "$out" | grep 'special account' >/dev/null
	no_units 'agor-executor@nobody*'
	# As root outside the daemon (a compromised agor account): the executor refuses itself.
	systemctl start agor-executor@nobody.socket
	if out=$(agorctl executors ping --socket /run/agor/executors/nobody.sock --timeout 10s 2>&1); then
		echo "the executor served nobody: $out"; return 1
	fi
	for _ in $(seq 50); do [ "$(systemctl is-active agor-executor@nobody.service)" = failed ] && break; sleep 0.1; done
	want "$(systemctl is-active agor-executor@nobody.service)" failed
	want "$(systemctl show -p NRestarts --value agor-executor@nobody.service)" 0
	want "$(systemctl show -p ExecMainStatus --value agor-executor@nobody.service)" 78
	journalctl -u agor-executor@nobody.service -o cat --no-pager | grep 'overflow uid' | tail -n 1
	systemctl stop agor-executor@nobody.socket
	systemctl reset-failed agor-executor@nobody.service
	reconfigure 60-identity
}
check "nobody (uid 65534, above min_uid, even listed in allowed_users) refused by the daemon before a unit starts, and by its executor (exit 78) when started behind the daemon's back" special_accounts

unknown_uid() {
	local out
	if out=$(setpriv --reuid=4242424 --regid=4242424 --clear-groups agorctl sessions 2>&1); then
		echo "uid 4242424 listed sessions: $out"; return 1
	fi
	echo "uid 4242424: $out"
	echo "$out" | grep unknown_caller >/dev/null
	if out=$(setpriv --reuid=4242424 --regid=4242424 --clear-groups agorctl audit 2>&1); then
		echo "uid 4242424 read the audit trail: $out"; return 1
	fi
	echo "$out" | grep unknown_caller >/dev/null
}
check "a caller whose uid has no account: refused (unknown_caller) by sessions and audit, sees nothing" unknown_uid

shared_account() {
	id agentsvc >/dev/null 2>&1 || useradd --create-home agentsvc
	reconfigure 60-identity 'execution: {run_as_unix_user: false, executor_unix_user: agentsvc}'
	# One account per person again however the check ends (its subshell's
	# exit): left on, the shared account would fail every concern after.
	trap 'allow_directory >/dev/null 2>&1; systemctl start agor-executor@alice.socket' EXIT
	# The prompts' workspace, in the one account's home, where they run.
	workspace agentsvc p
	rm -f /home/agentsvc/p/whoami.txt
	local u
	for u in alice bob; do
		start_model -bash 'id -un >> whoami.txt' -text 'noted.' # one scripted turn each
		as "$u" agorctl prompt "$u" 'who runs this?' --mode bypassPermissions --cwd p >/tmp/shared-$u.out 2>&1 ||
			{ cat /tmp/shared-$u.out; return 1; }
	done
	want "$(sort -u /home/agentsvc/p/whoami.txt)" agentsvc
	want "$(wc -l </home/agentsvc/p/whoami.txt)" 2
	local trail
	trail=$(agorctl audit --action api_key_issued)
	echo "$trail" | grep '"user":"alice"' >/dev/null
	echo "$trail" | grep '"user":"bob"' >/dev/null
	echo "both prompts ran as agentsvc ($(cat /home/agentsvc/p/whoami.txt | tr '\n' ' ')); the audit trail names alice and bob"
	allow_directory # back to one account per person
	systemctl start agor-executor@alice.socket # as the checks after these expect
}
check "run_as_unix_user: false: alice's and bob's prompts both run as executor_unix_user; the audit trail names alice and bob" shared_account

doctor_accounts() {
	local line
	line=$(agorctl doctor | grep -E '^(ok|warn|FAIL) +accounts ') || true
	echo "$line"
	echo "$line" | grep '^ok .*user database userdb' >/dev/null
	echo "$line" | grep 'directory accounts visible: .*(uid 2000[12])' >/dev/null
	reconfigure 50-identity # the last of the concern: the base again
}
check "agorctl doctor names the user database (userdb) and a directory account it sees" doctor_accounts
