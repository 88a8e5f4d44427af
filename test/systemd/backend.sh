# The daemon's systemd backend, driven by agorctl as agor. Sourced by checks.sh (uses lib.sh).

ensure_alice() {
	systemctl stop agor-executor@alice.socket agor-executor@alice.service
	local out
	out=$(as agor agorctl executors ensure alice)
	echo "$out"
	want "$(echo "$out" | sed -n 's/.*"uid":\([0-9]*\).*/\1/p')" "$(id -u alice)"
	want "$(systemctl is-active agor-executor@alice.socket)" active
	as agor agorctl executors list --no-daemon | grep -E '^alice +active +active'
}
check "agorctl executors ensure as agor: StartUnit over D-Bus under polkit, ping reports alice" ensure_alice
ensure_refusals() {
	local out u
	for u in root no-such-user; do
		if out=$(as agor agorctl executors ensure "$u" 2>&1); then echo "ensure $u succeeded"; return 1; fi
		echo "$out"
	done
	no_units 'agor-executor@root*' 'agor-executor@no-such-user*'
	printf 'execution:\n  allowed_users: [alice, bob]\n' >/tmp/limited.yaml
	chmod 644 /tmp/limited.yaml
	if out=$(as agor agorctl executors ensure --config /tmp/limited.yaml carol 2>&1); then echo "carol allowed"; return 1; fi
	echo "$out"
	echo "$out" | grep "not allowed" >/dev/null
	no_units 'agor-executor@carol*'
	# carol for herself, with a configuration that lets anyone in (the
	# base's drop-in keeps her out): what refuses her is polkit, not agor.
	printf 'execution: {allowed_users: [], allowed_groups: []}\n' >/tmp/open.yaml
	chmod 644 /tmp/open.yaml
	if out=$(as carol agorctl executors ensure --config /tmp/open.yaml carol 2>&1); then echo "carol could start her own unit"; return 1; fi
	echo "$out"
	echo "$out" | grep "not authorized" >/dev/null
	no_units 'agor-executor@carol*'
}
check "ensure refuses root, a missing user, a user not allowed by config, and non-agor callers; no unit started" ensure_refusals
ensure_20() {
	local users=() u out
	for i in $(seq -w 1 20); do
		u=user$i
		id "$u" >/dev/null 2>&1 || useradd --create-home "$u"
		users+=("$u")
	done
	out=$(as agor agorctl executors ensure "${users[@]}")
	for u in "${users[@]}"; do
		grep -q "^$u .*\"user\":\"$u\"" <<<"$out" || { echo "no answer from $u"; echo "$out"; return 1; }
	done
	echo "20 users brought up concurrently, each executor answered as its user"
	as agor agorctl executors stop --no-daemon "${users[@]}" >/dev/null
}
check "20 users brought up concurrently through D-Bus, all answer" ensure_20
