# The task sandbox (Landlock) under the shipped unit's hardening, seccomp
# filter included (sourced by checks.sh after the prompt checks: uses
# start_model and the agents they set up).

sandbox_prompt() {
	setup_agents >/dev/null # Claude Code at its stand-in: this concern may run without the prompt concern before it
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/outside.txt /home/alice/proj/inside.txt
	local before
	before=$(sha256sum </home/alice/.bashrc)
	start_model -bash 'echo in > inside.txt; echo out > ~/outside.txt; echo x >> ~/.bashrc; true' -text 'tried all three.'
	as alice agorctl prompt alice 'write three files' --cwd proj --sandbox workspace --mode bypassPermissions >/tmp/sbx.out 2>&1 ||
		{ cat /tmp/sbx.out; return 1; }
	grep '^completed' /tmp/sbx.out >/dev/null
	want "$(stat -c %U /home/alice/proj/inside.txt)" alice
	if [ -e /home/alice/outside.txt ]; then
		echo "~/outside.txt was written; the task's events and the executor's unit:"
		as alice agorctl events "$(task_of)" | head -n 3
		systemctl show -p SystemCallFilter agor-executor@alice.service | tr ' ' '\n' | grep -c landlock || true
		journalctl -u agor-executor@alice.service -n 5 --no-pager -o cat
		return 1
	fi
	want "$(sha256sum </home/alice/.bashrc)" "$before"
	local task evs
	task=$(task_of)
	evs=$(as alice agorctl events "$task") # whole, so no early-exiting grep breaks the pipe (pipefail)
	grep '"event_type":"sandbox"' <<<"$evs"
	grep '"enforced":true' <<<"$evs" >/dev/null
	agorctl audit --user alice --action task_started | tail -n 1 | grep '"sandbox":"workspace"' >/dev/null ||
		{ echo "no task_started record with the level:"; agorctl audit --user alice --action task_started | tail -n 2; return 1; }
	local doc
	doc=$(agorctl doctor || true) # other checks may warn or fail here; this one is about the sandbox
	grep -E '^ok +sandbox +Landlock ABI [1-9]' <<<"$doc" || { echo "$doc"; return 1; }
	echo "under workspace: proj/inside.txt written (alice's), ~/outside.txt absent, ~/.bashrc unchanged; the task's sandbox event and its audit record say workspace"
}
check "as alice, a prompt under --sandbox workspace cannot write outside its cwd (shipped unit, seccomp included)" sandbox_prompt

# The ways out of a confined task that Landlock's file rules alone left
# open, tried under the shipped unit as alice: each must fail, judged on
# disk.
sandbox_escapes() {
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/escaped-*
	local out
	# The daemon's API socket: a confined exec asking for an unconfined one.
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- \
		agorctl exec alice -- touch /home/alice/escaped-daemon 2>&1 || true)
	echo "daemon socket: $(tail -n 1 <<<"$out")"
	grep -qi 'not permitted' <<<"$out"
	# A tmux server of hers: new-window would run outside the sandbox.
	as alice tmux -S /home/alice/.tmux-test new-session -d -s outside 'sleep 120'
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- \
		tmux -S /home/alice/.tmux-test new-window 'touch /home/alice/escaped-tmux' 2>&1 || true)
	as alice tmux -S /home/alice/.tmux-test kill-server 2>/dev/null || true
	echo "tmux server: $(tail -n 1 <<<"$out")"
	# The system bus (her user bus the same way: any Unix socket is refused).
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- busctl --system list 2>&1 || true)
	echo "D-Bus: $(tail -n 1 <<<"$out")"
	grep -qi 'not permitted\|denied' <<<"$out"
	# chmod adding group or other write.
	out=$(as alice agorctl exec alice --sandbox read-only --cwd proj -- chmod 666 /home/alice/.bashrc 2>&1 || true)
	echo "chmod 666 ~/.bashrc: $(tail -n 1 <<<"$out")"
	want "$(stat -c %a /home/alice/.bashrc)" 644
	sleep 0.5
	for f in daemon tmux; do
		[ ! -e "/home/alice/escaped-$f" ] || { echo "escaped through $f"; return 1; }
	done
	# A workspace that would be her whole home.
	if out=$(as alice agorctl exec alice --sandbox workspace -- true 2>&1); then echo "workspace at home ran"; return 1; fi
	echo "workspace without --cwd: $out"
	grep -q -- '--cwd' <<<"$out"
}
check "as alice, a confined exec cannot reach the daemon's socket, a tmux server of hers or D-Bus, cannot chmod ~/.bashrc, and a workspace needs --cwd (shipped unit)" sandbox_escapes

# Kernel objects the mount view alone does not cover: a confined task has
# an IPC namespace and a devpts instance of its own, so her SysV segments
# and queues and her other terminals are not its to read, change or
# remove; it still gets terminals of its own. The same probe unconfined
# sees hers: the difference is the task's namespaces.
sandbox_kernel_objects() {
	install -d -o alice -g alice /home/alice/proj
	local shm q tty probe in out
	shm=$(as alice ipcmk -M 4096 | sed -n 's/.*id: *\([0-9]*\).*/\1/p')
	q=$(as alice ipcmk -Q | sed -n 's/.*id: *\([0-9]*\).*/\1/p')
	as alice tmux -S /home/alice/.tmux-ipc new-session -d -s outside 'sleep 120'
	tty=$(as alice tmux -S /home/alice/.tmux-ipc display -p '#{pane_tty}')
	test -n "$shm"
	test -n "$q"
	test -n "$tty"
	# (ipcs -i exits 0 whether or not it finds the id: its words decide.)
	probe="case \$(ipcs -m -i $shm 2>&1) in *'not found'*) echo shm-hidden ;; *) echo shm-seen ;; esac
		case \$(ipcs -q -i $q 2>&1) in *'not found'*) echo queue-hidden ;; *) echo queue-seen ;; esac
		( : >$tty ) 2>/dev/null && echo tty-opened || echo tty-refused
		script -qc tty /dev/null </dev/null | tr -d '\r'"
	in=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- sh -c "$probe; ipcrm -m $shm 2>/dev/null && echo shm-removed" 2>&1 </dev/null || true)
	as alice ipcs -m -i "$shm" >/dev/null 2>&1 || { echo "her segment $shm is gone"; return 1; }
	out=$(as alice agorctl exec alice --sandbox off --cwd proj -- sh -c "$probe" 2>&1 </dev/null || true)
	echo "confined: $(tr '\n' ' ' <<<"$in"); unconfined: $(tr '\n' ' ' <<<"$out")"
	as alice ipcrm -m "$shm" -q "$q"
	as alice tmux -S /home/alice/.tmux-ipc kill-server 2>/dev/null || true
	# Each its own command: in an && list, errexit would let a failure by.
	grep -q '^shm-seen' <<<"$out" || { echo "the probe did not see her segment unconfined"; return 1; }
	grep -q '^queue-seen' <<<"$out" || { echo "the probe did not see her queue unconfined"; return 1; }
	grep -q '^tty-opened' <<<"$out" || { echo "the probe could not open her terminal unconfined"; return 1; }
	grep -q '^shm-hidden' <<<"$in" || { echo "the confined task saw her segment"; return 1; }
	grep -q '^queue-hidden' <<<"$in" || { echo "the confined task saw her queue"; return 1; }
	grep -q '^tty-refused' <<<"$in" || { echo "the confined task opened her terminal $tty"; return 1; }
	if grep -q 'shm-removed' <<<"$in"; then echo "the confined task removed her segment"; return 1; fi
	grep -q '^/dev/pts/[0-9]' <<<"$in" || { echo "the confined task got no terminal of its own"; return 1; }
}
check "as alice, a confined exec sees none of her SysV segments and queues, nor her other terminals, and gets terminals of its own; unconfined sees hers (shipped unit)" sandbox_kernel_objects

# The view of a confined exec under the shipped unit (user, mount and PID
# namespaces), tried as alice and judged on disk and by what a later
# unconfined git runs: metadata outside the workspace, the repository's
# config and hooks, the project's Claude Code settings, a nested repository
# made during the task, a process outside.
sandbox_view() {
	local proj=/home/alice/vproj out before
	rm -rf "$proj" /home/alice/view-ran
	install -d -o alice -g alice "$proj"
	as alice git -C "$proj" init -q
	as alice install -d "$proj/.claude"
	as alice sh -c "echo '{}' > $proj/.claude/settings.json"
	before="$(stat -c '%a %Y' /home/alice/.bashrc) $(md5sum <"$proj/.git/config") $(md5sum <"$proj/.claude/settings.json")"
	as alice sleep 120 >/dev/null 2>&1 & # not holding the check's output open
	local outside=$!
	out=$(as alice agorctl exec alice --sandbox workspace --cwd vproj -- sh -c "
		chmod 600 /home/alice/.bashrc; touch -d 2001-01-01 /home/alice/.bashrc; setfacl -m u:bob:rw /home/alice/.bashrc
		echo '[core] fsmonitor = touch /home/alice/view-ran' >> .git/config
		printf '#!/bin/sh\ntouch /home/alice/view-ran\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
		mv .git .git-away; echo '{\"hooks\":{}}' > .claude/settings.json
		mkdir -p sub/.git/hooks sub/.git/objects sub/.git/refs && echo 'ref: refs/heads/main' > sub/.git/HEAD
		printf '[core]\n\tfsmonitor = touch /home/alice/view-ran\n' > sub/.git/config
		kill $outside; echo done" </dev/null 2>&1 || true)
	echo "$out" | grep -c 'Read-only file system' | sed 's/^/refused by the read-only view: /'
	grep -q done <<<"$out"
	kill -0 "$outside" || { echo "the confined exec killed a process of hers outside"; return 1; }
	kill "$outside"
	want "$(stat -c '%a %Y' /home/alice/.bashrc) $(md5sum <"$proj/.git/config") $(md5sum <"$proj/.claude/settings.json")" "$before"
	if grep -q bob <<<"$(getfacl -c /home/alice/.bashrc 2>/dev/null)"; then echo "an ACL was set outside"; return 1; fi
	[ -d "$proj/.git" ] && [ ! -e "$proj/.git-away" ] || { echo ".git was renamed"; return 1; }
	[ -e "$proj/sub/.git/config.agor-disabled" ] || { echo "the nested repository's config was not disabled"; ls -la "$proj/sub/.git"; return 1; }
	# Later, unconfined, as she would: nothing planted runs.
	as alice git -C "$proj/sub" status >/dev/null 2>&1 || true
	as alice git -C "$proj" status >/dev/null 2>&1 || true
	[ ! -e /home/alice/view-ran ] || { echo "a planted command ran"; return 1; }
	local audited
	audited=$(agorctl audit --action sandbox_undone 2>/dev/null | grep -c 'agor-disabled' || true)
	echo "disabled plants in the audit trail (sandbox_undone): $audited"
	[ "$audited" -ge 1 ] || { agorctl audit --action sandbox_undone | tail -n 3; return 1; }
	journalctl --no-pager -q -u agor-executor@alice.service --since -2min | grep -o 'sub/.git/config: [^(]*' | sed -n 1p | grep .
}
check "as alice, a confined exec's view (namespaces): no mode, time or ACL changes outside, the repository's config and hooks and the project's settings read-only, .git not renamed, a nested repository's config disabled and reported, a process outside not signalled; a later unconfined git runs nothing planted (shipped unit)" sandbox_view

# The post-run guard under the shipped unit, as alice: what the view
# leaves writable in the workspace's own .git (config.worktree, a rebase
# stopped with exec lines to come) and a bare repository made anew are
# disabled when the confined exec ends, so a later unconfined git runs
# nothing planted; agorctl disabled, run as her, lists and restores them.
sandbox_guard() {
	local proj=/home/alice/gproj out n
	rm -rf "$proj" /home/alice/guard-ran
	install -d -o alice -g alice "$proj"
	as alice git -C "$proj" init -q
	as alice git -C "$proj" config extensions.worktreeConfig true
	as alice git -C "$proj" -c user.name=a -c user.email=a@b commit -q --allow-empty -m one
	# The task's script, written beforehand to keep the quoting plain.
	as alice tee "$proj/plant.sh" >/dev/null <<-'EOF'
		ran='"touch /home/alice/guard-ran;:"'
		git -c user.name=a -c user.email=a@b commit -q --allow-empty -m two
		git init -q --bare tools/cache
		printf '[core]\n\tbare = false\n\tworktree = %s\n\tfsmonitor = %s\n' "$PWD" "$ran" >> tools/cache/config
		printf '[core]\n\tfsmonitor = %s\n' "$ran" > .git/config.worktree
		printf '#!/bin/sh\nprintf "break\\nexec touch /home/alice/guard-ran\\n" > "$1"\n' > ed.sh
		chmod +x ed.sh
		GIT_SEQUENCE_EDITOR=$PWD/ed.sh git -c user.name=a -c user.email=a@b rebase -q -i HEAD~1 >/dev/null 2>&1
		grep -c exec .git/rebase-merge/git-rebase-todo
		echo done
	EOF
	out=$(as alice agorctl exec alice --sandbox workspace --cwd gproj -- sh plant.sh </dev/null 2>&1 || true)
	grep -q done <<<"$out" || { echo "$out"; return 1; }
	echo "the exec's reply names as disabled: $(sed -n 's/^warning: disabled what .* sandbox: \([^:]*\): .*/\1/p' <<<"$out" | tr '\n' ' ')"
	as alice git -C "$proj/tools/cache" status >/dev/null 2>&1 || true
	as alice git -C "$proj" status >/dev/null 2>&1 || true
	as alice git -C "$proj" -c user.name=a -c user.email=a@b rebase --continue >/dev/null 2>&1 || true
	[ ! -e /home/alice/guard-ran ] || { echo "a planted command ran"; echo "$out"; return 1; }
	out=$(as alice env HOME=/home/alice agorctl disabled list)
	n=$(grep -c "^$proj/" <<<"$out" || true)
	[ "$n" -ge 3 ] || { echo "agorctl disabled list: $out"; return 1; }
	out=$(as alice env HOME=/home/alice agorctl disabled restore "$proj")
	grep -q "^restored $proj/.git/config.worktree$" <<<"$out" || { echo "$out"; return 1; }
	grep -q fsmonitor "$proj/tools/cache/config" || { echo "the bare repository's config not put back: $out"; return 1; }
	echo "listed $n; restore said: $(tr '\n' ';' <<<"$out")"
	rm -rf "$proj" # what was put back would run
}
check "as alice, what a confined exec leaves in its repository's writable .git (config.worktree, a rebase's exec lines) and a bare repository it makes are disabled, nothing planted runs in a later unconfined git, and agorctl disabled restore puts them back as her (shipped unit)" sandbox_guard

# Hooks a confined prompt plants (Claude Code's settings, its own state
# or the user's) never run in an unconfined prompt.
sandbox_hooks() {
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/hook-ran
	local hook='{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"touch /home/alice/hook-ran"}]}]}}'
	start_model -bash "mkdir -p ~/.claude; echo '$hook' > ~/.claude/settings.json; echo '$hook' > \"\$CLAUDE_CONFIG_DIR/settings.json\"; true" -text 'planted.' -plain 2
	as alice agorctl prompt alice 'plant' --cwd proj --sandbox workspace --mode bypassPermissions >/tmp/plant.out 2>&1 || { cat /tmp/plant.out; return 1; }
	if [ -e /home/alice/.claude/settings.json ] && grep -q hook-ran /home/alice/.claude/settings.json; then
		echo "the confined prompt wrote ~/.claude/settings.json"; return 1
	fi
	# --sandbox off: the check is about an unconfined prompt, which the
	# packaged sandbox.prompts (workspace) no longer gives one naming none.
	as alice agorctl prompt alice 'hello' --cwd proj --sandbox off --mode bypassPermissions >/tmp/after.out 2>&1 || { cat /tmp/after.out; return 1; }
	[ ! -e /home/alice/hook-ran ] || { echo "a hook planted by a confined prompt ran unconfined"; return 1; }
	echo "~/.claude/settings.json untouched; the confined state's hook did not run in the unconfined prompt"
}
check "as alice, hooks planted by a confined prompt never run in an unconfined one (shipped unit)" sandbox_hooks

# With the operator's exception (sandbox.unix_sockets: true) a confined
# exec reaches the daemon's socket; the daemon still acts for nothing
# from inside a sandboxed task.
sandbox_confined_caller() {
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/escaped-caller
	set_dropin 50-sandbox 'sandbox: {unix_sockets: true}'
	systemctl stop agor-executor@alice.socket agor-executor@alice.service # read the configuration afresh
	local out rc=0
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- \
		agorctl exec alice --sandbox off -- touch /home/alice/escaped-caller 2>&1) || true
	drop_dropin 50-sandbox
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	echo "from inside: $(tail -n 1 <<<"$out")"
	grep -q confined_caller <<<"$out" || rc=1
	[ ! -e /home/alice/escaped-caller ] || { echo "the daemon acted for a confined task"; rc=1; }
	journalctl -u agor-daemon --no-pager -o cat | grep 'request from inside a sandboxed task refused' | tail -n 1
	return $rc
}
check "as alice, with sandbox.unix_sockets on, the daemon refuses what a confined task asks of it (shipped unit)" sandbox_confined_caller

# A bearer token on the loopback TCP listener carries no process: the
# daemon finds the client's socket in the kernel's table and asks its
# owner's executor whether a confined task holds it. A confined exec that
# reads alice's token from her home and asks for an unconfined exec over
# TCP gets nothing done, nor when it closes the connection right after
# sending; the same request from an unconfined exec is served.
sandbox_tcp_token() {
	tcp_api || return 1
	install -d -o alice -g alice /home/alice/proj
	rm -f /home/alice/escaped-tcp
	agorctl api-token new alice | install -o alice -g alice -m 600 /dev/stdin /home/alice/.agor-token
	local body='{"argv":["touch","/home/alice/escaped-tcp"],"cwd":"","timeout_ms":5000,"sandbox":"off"}' script out rc=0
	script='exec 3<>/dev/tcp/127.0.0.1/8123 || exit 9
b='"'$body'"'
printf "POST /v1/executors/alice/exec HTTP/1.0\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" "$(cat ~/.agor-token)" "${#b}" "$b" >&3'
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- bash -c "$script"'; cat <&3' 2>&1) || true
	echo "confined, over TCP with her token: $(head -n 1 <<<"$out" | tr -d '\r'); $(grep -o '"reason":"[a-z_]*"' <<<"$out")"
	grep -q '^HTTP/1.[01] 403' <<<"$out" && grep -q confined_caller <<<"$out" || rc=1
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- bash -c "$script"'; exec 3>&-; sleep 2' 2>&1) || true
	sleep 1
	[ ! -e /home/alice/escaped-tcp ] || { echo "the daemon ran an unconfined exec for a confined task over TCP"; rc=1; }
	echo "confined, sent then closed: $( [ -e /home/alice/escaped-tcp ] && echo served || echo 'nothing done')"
	out=$(as alice agorctl exec alice --sandbox off -- bash -c "$script"'; cat <&3' 2>&1) || true
	echo "unconfined, the same request: $(head -n 1 <<<"$out" | tr -d '\r')"
	grep -q '^HTTP/1.[01] 200' <<<"$out" && [ -e /home/alice/escaped-tcp ] || rc=1
	journalctl -u agor-daemon --no-pager -o cat | grep 'TCP request refused' | tail -n 2 | cut -c1-240
	rm -f /home/alice/escaped-tcp /home/alice/.agor-token
	return $rc
}
check "as alice, a confined exec with her bearer token gets nothing done over the loopback TCP listener, sent and closed or not; unconfined, the same request is served (shipped unit)" sandbox_tcp_token

# A confined task opens nothing of hers to bob by an ACL (setfacl on a
# file and on its directory, a default ACL): each is refused, and bob,
# who may reach the workspace, still cannot write there. The same
# setfacl unconfined lets him: the difference is the filter.
sandbox_acl() {
	local proj=/home/alice/aclproj out rc=0
	rm -rf "$proj"
	install -d -o alice -g alice -m 755 "$proj"
	as alice sh -c "echo hers > $proj/f; echo hers > $proj/shared"
	getfacl -p /home/alice >/tmp/home-alice.acl
	setfacl -m u:bob:x /home/alice # bob may reach it: the workspace's own modes decide
	out=$(as alice agorctl exec alice --sandbox workspace --cwd aclproj -- sh -c \
		'setfacl -m u:bob:rw f; setfacl -m u:bob:rwx .; setfacl -d -m u:bob:rwx .; echo tried' 2>&1 </dev/null || true)
	echo "confined: $(grep -c 'not supported' <<<"$out") setfacl calls refused as not supported"
	grep -q tried <<<"$out" || rc=1
	as alice agorctl exec alice --sandbox off --cwd aclproj -- setfacl -m u:bob:rw shared </dev/null || rc=1
	as bob sh -c "echo bob >> $proj/f" 2>/dev/null && { echo "bob wrote f"; rc=1; }
	as bob sh -c "echo bob > $proj/bobs" 2>/dev/null && { echo "bob made a file in her workspace"; rc=1; }
	as bob sh -c "echo bob >> $proj/shared" || { echo "bob could not write what she shared unconfined: the check proves nothing"; rc=1; }
	echo "f: $(cat "$proj/f"), acl entries for bob on f and the directory: $(getfacl -cp "$proj/f" "$proj" 2>/dev/null | grep -c bob)"
	[ "$(cat "$proj/f")" = hers ] || rc=1
	setfacl --restore=/tmp/home-alice.acl
	return $rc
}
check "as alice, a confined exec sets no ACL (file, directory, default): bob cannot write her workspace; unconfined, the same setfacl lets him (shipped unit)" sandbox_acl

# After umask 0 a confined exec makes nothing more open than her umask
# (mkdir, a redirect, Python, node), and reads her real umask: the view's
# init answers the umask calls, through a pidfd where /proc is the
# unit's. The init itself is out of the task's reach (its descriptors,
# ptrace). Unconfined, umask 0 makes 0777.
sandbox_umask() {
	local proj=/home/alice/uproj out mine
	rm -rf "$proj"
	install -d -o alice -g alice "$proj"
	mine=$(as alice agorctl exec alice --sandbox off --cwd uproj -- sh -c 'umask; umask 0; mkdir open; stat -c %a open' </dev/null)
	out=$(as alice agorctl exec alice --sandbox workspace --cwd uproj -- sh -c '
		umask 0; mkdir d; echo x > f; mkdir -p p/q
		python3 -c "import os; print(\"python\", oct(os.umask(0)))"
		for n in node /opt/node/node; do ! command -v $n >/dev/null || { $n -e "console.log(\"node\", process.umask().toString(8))"; break; }; done
		echo "sh $(umask)"
		while read -r k v; do [ "$k" != PPid: ] || init=$v; done </proc/self/status # the init, as /proc numbers it
		readlink /proc/$init/fd/0 >/dev/null 2>&1 && echo init-fds-read
		python3 -c "import ctypes, os; print(\"ptrace init\", ctypes.CDLL(None, use_errno=True).ptrace(16, 1, 0, 0), os.strerror(ctypes.get_errno()))"
		stat -c "%a %n" d f p/q' 2>&1 </dev/null)
	echo "unconfined: umask $(head -n 1 <<<"$mine"), after umask 0 mkdir gives $(tail -n 1 <<<"$mine")"
	echo "confined: $(tr '\n' ' ' <<<"$out")"
	want "$(tail -n 1 <<<"$mine")" 777
	local m
	m=$(head -n 1 <<<"$mine")
	grep -q "^sh $m\$" <<<"$out" || { echo "the confined shell reads another umask than her $m"; return 1; }
	grep -q "^python $(printf '0o%o' "$((8#$m))")\$" <<<"$out"
	if grep -q init-fds-read <<<"$out"; then echo "the task read the init's descriptors"; return 1; fi
	grep -q '^ptrace init -1 Operation not permitted' <<<"$out"
	for f in d f p/q; do
		[ $(($(stat -c '0%a' "$proj/$f") & 8#002)) -eq 0 ] || { echo "$f is world-writable"; return 1; }
		[ $(($(stat -c '0%a' "$proj/$f") & ~(8#777 & ~8#$m) & 8#777)) -eq 0 ] || { echo "$f has a bit her umask $m withholds"; return 1; }
	done
}
check "as alice, after umask 0 a confined exec makes nothing more open than her umask and reads her real one; the view's init is out of its reach; unconfined, umask 0 makes 0777 (shipped unit)" sandbox_umask

# POSIX shared memory (/dev/shm) of her unconfined work is neither seen
# nor changed by a confined exec, which has a /dev/shm of its own
# (shm_open works); what it leaves there is not seen afterwards.
sandbox_shm() {
	install -d -o alice -g alice /home/alice/proj
	local out after
	as alice agorctl exec alice --sandbox off --cwd proj -- sh -c 'echo hers > /dev/shm/agor-hers' </dev/null
	out=$(as alice agorctl exec alice --sandbox workspace --cwd proj -- sh -c '
		echo "listed: $(ls /dev/shm | tr "\n" " ")"; cat /dev/shm/agor-hers 2>/dev/null || echo unread
		echo theirs > /dev/shm/agor-hers; echo mine > /dev/shm/agor-mine
		python3 -c "from multiprocessing import shared_memory as s; m = s.SharedMemory(\"agor-py\", create=True, size=4096); m.buf[0] = 7; n = s.SharedMemory(\"agor-py\"); print(\"shm_open\", n.buf[0]); n.close(); m.close()"
		stat -f -c "%T" /dev/shm' 2>&1 </dev/null || true)
	after=$(as alice agorctl exec alice --sandbox off --cwd proj -- sh -c 'cat /dev/shm/agor-hers; ls /dev/shm | tr "\n" " "' </dev/null)
	as alice agorctl exec alice --sandbox off --cwd proj -- rm -f /dev/shm/agor-hers </dev/null
	echo "confined: $(tr '\n' ' ' <<<"$out" | cut -c1-200); unconfined after: $(tr '\n' ' ' <<<"$after")"
	grep -q '^unread' <<<"$out"
	if grep -q '^listed:.*agor-hers' <<<"$out"; then echo "her segment is listed"; return 1; fi
	grep -q '^shm_open 7' <<<"$out"
	grep -q '^tmpfs' <<<"$out"
	want "$(head -n 1 <<<"$after")" hers
	if grep -q 'agor-mine' <<<"$after"; then echo "the confined exec's segment is seen after"; return 1; fi
}
check "as alice, a confined exec has a /dev/shm of its own: her segments neither listed, read nor changed, shm_open works, nothing of its own seen after (shipped unit)" sandbox_shm

# A confined agent's CLI state is per workspace: a hook a confined prompt
# plants in its $CLAUDE_CONFIG_DIR in one project does not run in a
# confined prompt in another, and does in the next one in the same
# project (so the plant took, and a session's own state is where it
# was).
sandbox_state_per_workspace() {
	local a=/home/alice/sproj-a b=/home/alice/sproj-b
	rm -rf "$a" "$b"
	install -d -o alice -g alice "$a" "$b"
	local hook='{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"touch hook-ran"}]}]}}'
	start_model -bash "echo '$hook' > \"\$CLAUDE_CONFIG_DIR/settings.json\"; true" -text 'planted.' -plain 2
	local p
	for p in sproj-a sproj-b sproj-a; do
		as alice agorctl prompt alice "in $p" --cwd "$p" --sandbox workspace --mode bypassPermissions >/tmp/state.out 2>&1 </dev/null ||
			{ cat /tmp/state.out; return 1; }
		[ "$p" != sproj-b ] || [ ! -e "$b/hook-ran" ] || { echo "the hook planted in sproj-a ran in sproj-b"; return 1; }
	done
	echo "state directories: $(ls /home/alice/.local/state/agor/confined/ | tr '\n' ' ')"
	[ -e "$a/hook-ran" ] || { echo "the hook did not run in sproj-a's next prompt: the check proves nothing"; return 1; }
	echo "the hook planted in sproj-a ran in sproj-a's next confined prompt, not in sproj-b's"
}
check "as alice, what a confined prompt plants in its agent's state in one project runs in no confined prompt of another (shipped unit)" sandbox_state_per_workspace

# Installs in a confined workspace with no network, as agents run them:
# npm install of a project whose dependency is a git repository (npm
# runs git clone, packs the clone, installs the pack and links its bin),
# and pip install --no-index of a local package into a venv (pip builds
# it in an isolated environment in TMPDIR). Their caches are the task's
# own (Spec.Env: the view has her home read-only). sandbox_pkgs REL makes
# /home/alice/REL afresh, hers: package.json naming the dependency by its
# repository's file URL (pkgsrc/agor-git-hello, branch main, outside the
# workspace as a remote is), and hipkg, whose in-tree build backend needs
# nothing installed.
sandbox_pkgs() {
	local proj=/home/alice/$1 src=/home/alice/pkgsrc/agor-git-hello
	ln -sf /opt/node/node /usr/local/bin/node
	ln -sf /opt/npm/bin/npm-cli.js /usr/local/bin/npm
	if [ ! -d "$src/.git" ]; then
		as alice install -d /home/alice/pkgsrc "$src"
		echo '{"name":"agor-git-hello","version":"1.0.0","bin":{"agor-git-hello":"cli.js"}}' | as alice tee "$src/package.json" >/dev/null
		printf '#!/usr/bin/env node\nconsole.log("git-hello-ran")\n' | as alice tee "$src/cli.js" >/dev/null
		as alice sh -c "cd $src && git init -q -b main && git add -A && git -c user.name=alice -c user.email=alice@agortest commit -qm one"
	fi
	rm -rf "$proj"
	as alice install -d "$proj" "$proj/hipkg"
	echo '{"name":"iproj","version":"1.0.0","dependencies":{"agor-git-hello":"git+file://'"$src"'#main"}}' | as alice tee "$proj/package.json" >/dev/null
	printf '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n' | as alice tee "$proj/hipkg/pyproject.toml" >/dev/null
	as alice tee "$proj/hipkg/backend.py" >/dev/null <<-'EOF'
		import base64, hashlib, os, zipfile
		NAME, VERSION = "agor_hi", "1.0"
		DIST = NAME + "-" + VERSION + ".dist-info/"
		FILES = {
		    NAME + "/__init__.py": "def main():\n    print('pip-ran')\n",
		    DIST + "METADATA": "Metadata-Version: 2.1\nName: agor-hi\nVersion: " + VERSION + "\n",
		    DIST + "WHEEL": "Wheel-Version: 1.0\nGenerator: agor-suite\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		    DIST + "entry_points.txt": "[console_scripts]\nagor-hi = agor_hi:main\n",
		}
		def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
		    name = NAME + "-" + VERSION + "-py3-none-any.whl"
		    record = []
		    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
		        for path, text in FILES.items():
		            data = text.encode()
		            z.writestr(path, data)
		            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
		            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
		        record.append(DIST + "RECORD,,")
		        z.writestr(DIST + "RECORD", "\n".join(record) + "\n")
		    return name
	EOF
}

# What the confined task runs in the project (no $( ): gemini's shell
# tool refuses command substitution). The container has Debian's pip but
# not python3-venv (ensurepip): the venv uses the system's pip, as
# Debian's python3-pip users do.
sandbox_install_cmd='npm install --offline --no-audit --no-fund --no-update-notifier > npm.log 2>&1; python3 -m venv --without-pip --system-site-packages .venv && .venv/bin/python -m pip install -q --no-index --disable-pip-version-check ./hipkg > pip.log 2>&1; echo installs-ran'

# sandbox_installed NAME DIR: one line saying whether DIR has what the
# installs make, judged as alice, unconfined: the dependency's files and
# its bin that runs, the lock naming the git URL, the console script and
# the module, nothing disabled by the guard.
sandbox_installed() {
	local name=$1 dir=$2 bin py mod lock disabled
	bin=$(as alice env -C "$dir" PATH=/usr/local/bin:/usr/bin:/bin ./node_modules/.bin/agor-git-hello 2>&1 || true)
	py=$(as alice env -C "$dir" .venv/bin/agor-hi 2>&1 || true)
	mod=$(as alice env -C "$dir" .venv/bin/python -c 'import agor_hi; print(agor_hi.__name__)' 2>&1 || true)
	lock=$(grep -c '"resolved": "git+file://' "$dir/package-lock.json" 2>&1 || true)
	disabled=$(find "$dir" -name '*.agor-disabled' | tr '\n' ' ')
	if [ "$bin" = git-hello-ran ] && [ "$(stat -c %U "$dir/node_modules/agor-git-hello/cli.js" 2>&1)" = alice ] &&
		[ "$py" = pip-ran ] && [ "$mod" = agor_hi ] && [ "$lock" = 1 ] && [ -z "$disabled" ]; then
		echo "$name: installed: node_modules/agor-git-hello (alice's) and its bin ran, package-lock.json resolves it by git, .venv's agor-hi ran and agor_hi imports, nothing disabled"
		return 0
	fi
	echo "$name: not installed: bin '$bin', agor-hi '$py', import '$mod', git-resolved locks $lock, disabled '$disabled'"
	echo "  npm.log: $(tail -n 4 "$dir/npm.log" 2>&1 | tr '\n' ';' | cut -c1-400)"
	echo "  pip.log: $(tail -n 4 "$dir/pip.log" 2>&1 | tr '\n' ';' | cut -c1-400)"
	return 1
}

sandbox_installs() {
	local out mark=/tmp/installs-before
	sandbox_pkgs iproj
	touch "$mark"
	out=$(as alice agorctl exec alice --sandbox workspace --cwd iproj -- sh -c "$sandbox_install_cmd" </dev/null 2>&1) || { echo "$out"; return 1; }
	grep -q installs-ran <<<"$out" || { echo "$out"; return 1; }
	if grep 'disabled what' <<<"$out"; then return 1; fi
	sandbox_installed exec /home/alice/iproj
	[ -z "$(find /home/alice/.npm /home/alice/.cache -newer "$mark" 2>/dev/null | head -n 1)" ] ||
		{ echo "the confined installs wrote alice's own caches"; return 1; }
}
check "as alice, a confined exec (--sandbox workspace) runs npm install of a project with a git dependency and pip install --no-index of a local package into a venv, offline; afterwards, unconfined, the bin and the console script run and the guard disabled nothing (shipped unit)" sandbox_installs

# The same installs through each of the four CLIs' shell tools, confined,
# the four at once, each in a project of its own (i/TOOL).
sandbox_agent_installs() {
	local saved=$modes_cmd tool bad=0 pids=() mark=/tmp/agent-installs-before
	modes_gateway # opencode to its own stand-in (modes.sh says why)
	modes_cmd=$sandbox_install_cmd
	start_model -bash "$sandbox_install_cmd" -text 'done.' -tools 2
	modes_models
	modes_agents
	modes_cmd=$saved
	as alice install -d /home/alice/i
	for tool in claude-code codex gemini opencode; do
		sandbox_pkgs "i/$tool"
	done
	touch "$mark"
	for tool in claude-code codex gemini opencode; do
		sandbox_agent_install "$tool" >"/tmp/installs-$tool.txt" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	for tool in claude-code codex gemini opencode; do
		cat "/tmp/installs-$tool.txt"
		grep -q "^$tool: installed" "/tmp/installs-$tool.txt" || bad=1
	done
	[ -z "$(find /home/alice/.npm /home/alice/.cache -newer "$mark" 2>/dev/null | head -n 1)" ] ||
		{ echo "a confined CLI's installs wrote alice's own caches"; bad=1; }
	reconfigure 50-modes # the base again
	return $bad
}

# sandbox_agent_install TOOL: TOOL's turn in i/TOOL, and what is there after.
sandbox_agent_install() {
	local tool=$1 prompt out
	prompt="run it. $sandbox_install_cmd"
	case $tool in gemini | opencode) prompt="run the shell command: $sandbox_install_cmd" ;; esac
	out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --mode bypassPermissions --cwd "i/$tool" --sandbox workspace --json 2>&1 </dev/null) || true
	sandbox_installed "$tool" "/home/alice/i/$tool" && return 0
	echo "  its events:"; cut -c1-300 <<<"$out" | tail -n 6 | sed 's/^/  /'
}
check "the four CLIs, confined (--sandbox workspace), run npm install (a git dependency) and pip install --no-index (a local package, into .venv) through their shell tools, offline: her bins and console scripts run afterwards, nothing disabled (shipped unit)" sandbox_agent_installs
