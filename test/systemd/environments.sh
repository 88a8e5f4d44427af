# Environments (issue 39): alice's executor in another Debian release's
# root, as alice, under the shipped units. run.sh builds the root once (the
# other release's minbase with python3, git and acl, cached) and binds it at
# /opt/envroot.tar.gz. Sourced by checks.sh after prompt (setup_agents,
# start_model), sandbox and escapes (env_escapes runs its attack in py).

env_root=/opt/envroot.tar.gz

env_add() {
	[ -s "$env_root" ] || { echo "no $env_root: run.sh did not build the environment's root"; return 1; }
	agorctl environments add py --root "$env_root" --users alice
	agorctl environments list | tee /tmp/env-list.txt
	grep -E '^py	/var/lib/agor/environments/py/root	agents=host	users=alice	groups=	units=ok$' /tmp/env-list.txt >/dev/null
	want "$(stat -c '%U %a' /etc/agor/environments/py.yaml)" "root 644"
	systemd-analyze verify --man=no agor-env-py@alice.socket agor-env-py@alice.service
	local doc
	doc=$(agorctl doctor 2>&1 || true)
	grep -E '^ok +environments +py: root, units and executor in place' <<<"$doc" || { grep environments <<<"$doc"; return 1; }
	echo "host: $(python3 --version); environment root: $(chroot /var/lib/agor/environments/py/root python3 --version)"
}
check "environments: agorctl environments add unpacks the tarball, writes the root-owned definition and units (systemd-analyze verify clean), doctor finds them" env_add

env_exec() {
	local host inside who
	host=$(python3 --version)
	inside=$(as alice agorctl exec --env py alice -- python3 --version </dev/null)
	want "$inside" "$(chroot /var/lib/agor/environments/py/root python3 --version)"
	[ "$inside" != "$host" ] || { echo "the environment's Python is the host's: $inside"; return 1; }
	who=$(as alice agorctl exec --env py alice -- id -un </dev/null)
	want "$who" alice
	want "$(systemctl show -p User --value agor-env-py@alice.service)" alice
	want "$(systemctl show -p RootDirectory --value agor-env-py@alice.service)" /var/lib/agor/environments/py/root
	want "$(systemctl show -p Slice --value agor-env-py@alice.service)" agor-executors.slice
	# Side by side: her executor on the host runs the host's Python.
	want "$(as alice agorctl exec alice -- python3 --version </dev/null)" "$host"
	systemctl is-active agor-env-py@alice.service agor-executor@alice.service >/dev/null
	echo "alice in py: $inside as $who; on the host: $host; both executors active"
}
check "environments: as alice, exec --env py runs the image's Python (not the host's) as alice, in agor-env-py@alice beside her host executor" env_exec

# A terminal in py, as alice would open one: her shell in the image.
env_terminal() {
	local py deb
	py=$(chroot /var/lib/agor/environments/py/root python3 --version)
	deb=$(cat /var/lib/agor/environments/py/root/etc/debian_version)
	in_tmux "agorctl terminal --env py alice"
	wait_pane 'alice@'
	tmux send-keys -t agorterm 'python3 --version; cat /etc/debian_version; id -un' Enter
	wait_pane "^$py\$"
	wait_pane "^$deb\$"
	tmux send-keys -t agorterm 'exit 3' Enter
	wait_pane 'agorctl-exit=3'
	tmux kill-server
	echo "alice's terminal in py: $py, Debian $deb (the host: $(python3 --version), Debian $(cat /etc/debian_version)); exit 3 passed through"
}
check "environments: agorctl terminal --env py gives alice her shell in the image (its Python and release), exit status passed through" env_terminal

env_prompt() {
	setup_agents
	start_model -bash 'id -un > env-who.txt; python3 --version > env-py.txt' -text 'I wrote them.'
	install -d -o alice -g alice /home/alice/envwork
	rm -f /home/alice/envwork/env-*.txt
	local out
	out=$(as alice agorctl prompt --env py alice 'who and which python?' --cwd envwork --mode bypassPermissions 2>&1 </dev/null) ||
		{ echo "$out" | tail -n 5; return 1; }
	echo "$out" | grep '^completed' >/dev/null || { echo "$out" | tail -n 5; return 1; }
	want "$(cat /home/alice/envwork/env-who.txt)" alice
	want "$(stat -c %U /home/alice/envwork/env-py.txt)" alice
	want "$(cat /home/alice/envwork/env-py.txt)" "$(chroot /var/lib/agor/environments/py/root python3 --version)"
	local s
	s=$(echo "$out" | sed -n 's/.* · session \([0-9a-f]*\)$/\1/p' | tail -n 1)
	want "$(as alice agorctl sessions --json | python3 -c 'import json, sys
print(*[x.get("environment", "") for x in json.load(sys.stdin)["sessions"] if x["id"] == sys.argv[1]])' "$s")" py
	echo "Claude Code in py wrote envwork/env-py.txt ($(cat /home/alice/envwork/env-py.txt)) as alice; the session records py"
}
check "environments: as alice, a real Claude Code prompt --env py runs a command that writes files she owns in her workspace, with the image's Python; the session records py" env_prompt

env_confined() {
	install -d -o alice -g alice /home/alice/envwork
	rm -f /home/alice/env-outside.txt /home/alice/envwork/env-inside.txt
	as alice agorctl exec --env py alice --sandbox workspace --cwd envwork -- sh -c 'echo in > env-inside.txt' </dev/null
	want "$(stat -c %U /home/alice/envwork/env-inside.txt)" alice
	local out
	if out=$(as alice agorctl exec --env py alice --sandbox workspace --cwd envwork -- sh -c 'echo out > /home/alice/env-outside.txt' 2>&1 </dev/null); then
		echo "a confined command wrote outside its workspace: $out"; return 1
	fi
	[ ! -e /home/alice/env-outside.txt ] || { echo "~/env-outside.txt exists"; return 1; }
	echo "under workspace in py: envwork/env-inside.txt written; outside: $(tail -n 1 <<<"$out")"
}
check "environments: a confined task (sandbox workspace) inside py writes its workspace and cannot write outside it" env_confined

# The escapes concern's attack, each of the four CLIs confined inside py
# (the image's git, setfacl and Python; the host's CLIs): judged on the
# host's disk as there.
env_escapes() {
	declare -F escapes >/dev/null || { echo "the escapes concern is not selected (AGOR_SUITE_ONLY)"; return 1; }
	escapes py
}
check "environments: each of the four CLIs, confined inside py, tries the escapes concern's ways out: nothing changes outside, nothing planted runs later unconfined, the daemon refuses its socket and TCP (shipped unit)" env_escapes

env_proxy() {
	set_dropin 50-environments 'network: {users: {alice: {mode: proxy}}}'
	agorctl network apply >/tmp/env-net.txt
	grep 'agor-env-py@\*.service.d' /tmp/env-net.txt >/dev/null || { cat /tmp/env-net.txt; return 1; }
	test -f /etc/systemd/system/agor-env-py@alice.service.d/50-agor-network.conf
	systemctl stop agor-env-py@alice.service # a running one keeps its namespace until it exits
	want "$(systemctl show -p PrivateNetwork --value agor-env-py@alice.service)" yes
	local links out
	links=$(as alice agorctl exec --env py alice -- cat /proc/net/dev </dev/null | tail -n +3 | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')
	want "$links" "lo "
	# The stand-in model listens on the container's loopback: out of reach
	# from her namespace except through the daemon's proxy.
	if out=$(as alice agorctl exec --env py alice -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 18080), timeout=3)' 2>&1 </dev/null); then
		echo "alice in py reached 127.0.0.1:18080 directly"; return 1
	fi
	as alice agorctl exec --env py alice -- python3 -c 'import os; print(os.environ["HTTPS_PROXY"])' </dev/null
	echo "alice in py under proxy: interfaces $links; direct connect: $(tail -n 1 <<<"$out")"
}
env_proxy_down() {
	drop_dropin 50-environments
	agorctl network apply >/dev/null
	systemctl stop agor-env-py@alice.service
	[ ! -e /etc/systemd/system/agor-env-py@alice.service.d/50-agor-network.conf ]
	want "$(systemctl show -p PrivateNetwork --value agor-env-py@alice.service)" no
}
check "environments: network mode proxy holds in py (the executor's drop-in mirrored by network apply: PrivateNetwork=yes, only lo, no direct connection, HTTPS_PROXY set)" env_proxy
check "environments: the configuration put back, network apply removes py's drop-in too" env_proxy_down

env_bob() {
	local out
	if out=$(as bob agorctl exec --env py bob -- true 2>&1 </dev/null); then echo "bob ran in py: $out"; return 1; fi
	echo "bob, exec --env py: $(tail -n 1 <<<"$out")"
	grep -q 'environment_not_allowed\|may not use environment py' <<<"$out"
	workspace bob envwork # a workspace of his: refused for the environment, not for the cwd
	if out=$(as bob agorctl prompt --env py bob 'hi' --cwd envwork 2>&1 </dev/null); then echo "bob prompted in py: $out"; return 1; fi
	grep -q 'may not use environment py' <<<"$out"
	# alice's executor socket in py: bob cannot even reach the directory.
	if out=$(as bob python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("/run/agor/executors/py/alice.sock")' 2>&1); then
		echo "bob connected to alice's executor in py"; return 1
	fi
	echo "bob -> /run/agor/executors/py/alice.sock: $(tail -n 1 <<<"$out")"
	grep -q 'Permission denied' <<<"$out"
	# Even started for him (as a compromised agor could, the polkit rule
	# lets it), his executor in py refuses to serve: exit 78, not restarted.
	systemctl start agor-env-py@bob.socket
	agorctl executors ping --socket /run/agor/executors/py/bob.sock --timeout 5s >/dev/null 2>&1 || true
	for _ in $(seq 50); do [ "$(systemctl show -p ExecMainStatus --value agor-env-py@bob.service)" = 78 ] && break; sleep 0.1; done
	want "$(systemctl show -p ExecMainStatus --value agor-env-py@bob.service)" 78
	journalctl -u agor-env-py@bob.service --no-pager -o cat | grep 'environment py' | tail -n 1
	systemctl stop agor-env-py@bob.socket agor-env-py@bob.service
	systemctl reset-failed agor-env-py@bob.service 2>/dev/null || true
}
check "environments: bob is refused py (not allowed: exec and prompt), cannot reach alice's executor socket in it, and his executor started there anyway exits 78" env_bob

env_remove() {
	agorctl environments add py2 --root /var/lib/agor/environments/py/root --users alice >/dev/null
	as alice agorctl exec --env py2 alice -- true </dev/null
	agorctl environments remove py2
	[ ! -e /etc/systemd/system/agor-env-py2@.service ] && [ ! -e /etc/agor/environments/py2.yaml ]
	test -d /var/lib/agor/environments/py/root # a directory given to add is not its to delete
	if systemctl is-active agor-env-py2@alice.service >/dev/null; then echo "alice's executor in py2 still runs"; return 1; fi
}
check "environments: remove stops an environment's executors and removes its units and definition (a directory given to add stays)" env_remove
