# Network egress per person (sourced by checks.sh; uses lib.sh only): a
# private network the checks make (namespace agor-egress, veth 10.199.0.1
# here and 10.199.0.2 there) with the stand-in model and a file server on
# 10.199.0.2:18080, named model.egress.test and files.egress.test in
# /etc/hosts. alice under proxy reaches the model only through the
# daemon's egress service; bob under open reaches the server directly.

eg_ns=agor-egress
eg_url=http://files.egress.test:18080/files/hello.txt

# eg_up makes the private network and starts the servers in it, once.
eg_up() {
	if ! grep -qw "$eg_ns" <<<"$(ip netns list)"; then
		ip netns add "$eg_ns"
		ip link add eg-host type veth peer name eg-peer
		ip link set eg-peer netns "$eg_ns"
		ip addr add 10.199.0.1/24 dev eg-host
		ip link set eg-host up
		ip netns exec "$eg_ns" ip addr add 10.199.0.2/24 dev eg-peer
		ip netns exec "$eg_ns" ip link set eg-peer up
		ip netns exec "$eg_ns" ip link set lo up
	fi
	grep -qs 'egress\.test' /etc/hosts || echo "10.199.0.2 model.egress.test files.egress.test sneaky.egress.test" >>/etc/hosts
	mkdir -p /srv/egress
	echo "egress file $$" >/srv/egress/hello.txt
	[ -e /etc/agor/agents.yaml.eg-orig ] || cp /etc/agor/agents.yaml /etc/agor/agents.yaml.eg-orig
	[ -s /tmp/eg-model.url ] && kill -0 "$(cat /tmp/eg-model.pid)" 2>/dev/null && return 0
	ip netns exec "$eg_ns" "$T/demomodel" -log -listen 10.199.0.2:18080 -files /srv/egress -tools 50 \
		-bash 'id -un > egress.txt' -text 'done.' >/tmp/eg-model.url 2>/tmp/eg-model.log &
	echo $! >/tmp/eg-model.pid
	for _ in $(seq 50); do [ -s /tmp/eg-model.url ] && return 0; sleep 0.1; done
	echo "the stand-in model did not start in $eg_ns"; cat /tmp/eg-model.log; return 1
}

# eg_config SECTION: the base configuration with SECTION (a network:
# block) over it, in config.d/50-egress.yaml (lists are read at the next
# connection, a mode by agorctl network apply).
eg_config() { set_dropin 50-egress "$1"; }
# eg_nogateway: the model's requests are the agent's own again, as without
# the packaged gateway (which would carry them over the daemon's socket,
# past the network): eg_prompt and eg_four check that an agent reaches
# its model through the egress service. gateway.sh's gateway_network checks
# the gateway for a person under proxy. Set after eg_config; restarts
# the daemon (gateway.enabled is read at its start).
eg_nogateway() {
	set_dropin 50-egress "$(cat "$confd/50-egress.yaml")
gateway: {enabled: false}"
	restart_daemon
}

# eg_audit FIELD=VALUE...: the daemon's egress audit lines since the check
# began, as journalctl matches them.
eg_audit() {
	journalctl --no-pager -q --since "@$eg_since" -u agor-daemon.service AGOR_AUDIT_ACTION=egress "$@" -o verbose | awk '
		/^[^ \t]/ { if (line != "") print line; line = ""; next }
		{
			sub(/^[ \t]+/, "")
			if ($0 ~ /^AGOR_(USER|TASK|HOST|PORT|ADDRESS|DECISION|REASON|BYTES_UP|BYTES_DOWN)=/) {
				k = $0; sub(/=.*/, "", k)
				line = line tolower(substr(k, 6)) "=" substr($0, length(k) + 2) " "
			}
		}
		END { if (line != "") print line }'
}

# eg_wait_audit MIN FIELD=VALUE...: eg_audit's lines once there are at
# least MIN (a tunnel is recorded when it closes, a moment after the
# client is done), waiting up to 10 s; prints what there is either way.
eg_wait_audit() {
	local min=$1 out i
	shift
	for i in $(seq 50); do
		out=$(eg_audit "$@")
		[ "$(grep -c . <<<"$out")" -ge "$min" ] && break
		sleep 0.2
	done
	echo "$out"
}

# alice_curl ARGS...: curl in alice's executor, as alice.
alice_curl() { as alice agorctl exec alice -- curl -sS --max-time 10 "$@" </dev/null; }

eg_kernel() {
	eg_up
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: [model.egress.test]}
    bob: {mode: open}'
	agorctl network apply
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" yes
	want "$(systemctl show -p PrivateNetwork --value agor-executor@bob.service)" no
	local out links
	out=$(as bob agorctl exec bob -- curl -sS --max-time 10 "http://10.199.0.2:18080/files/hello.txt" </dev/null)
	want "$out" "$(cat /srv/egress/hello.txt)"
	echo "bob (open) fetched it directly: $out"
	links=$(as alice agorctl exec alice -- cat /proc/net/dev </dev/null | tail -n +3 | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')
	want "$links" "lo "
	echo "alice's executor sees these interfaces: $links"
	if out=$(alice_curl --noproxy '*' http://10.199.0.2:18080/files/hello.txt 2>&1); then
		echo "alice reached the server directly: $out"
		return 1
	fi
	echo "alice, directly: $out"
	as alice agorctl exec alice -- env </dev/null | grep -E '^(HTTPS_PROXY|HTTP_PROXY|NO_PROXY)='
	# agorctl doctor shows each person's mode, their units match, and a
	# unit with PrivateNetwork=yes sees only lo on this host.
	out=$(agorctl doctor 2>&1 || true)
	grep -E '^ok +network +default open, alice proxy, bob open; units match' <<<"$out"
	grep -E '^ok +network-ns ' <<<"$out"
}
check "egress: alice under proxy runs in a network namespace of her own (PrivateNetwork=yes from agorctl network apply, only lo); her direct connection to the test server fails; bob under open fetches from it" eg_kernel

eg_proxy() {
	eg_since=$(date +%s)
	local out
	out=$(alice_curl -o /dev/null -w '%{http_code}' "$eg_url" 2>&1 || true)
	want "$out" 403
	out=$(eg_wait_audit 1 AGOR_USER=alice AGOR_HOST=files.egress.test AGOR_DECISION=denied)
	echo "journal: $out"
	grep -q 'reason=not listed' <<<"$out"
	# (grep -c, not -q: under pipefail a reader that stops early fails the
	# pipeline once the writer before it is left with more to write.)
	[ "$(grep '"action":"egress"' /var/lib/agor/audit.jsonl | grep '"host":"files.egress.test"' | grep -c '"decision":"denied"')" -gt 0 ]
	# Listed: at her next connection, without a restart.
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: [model.egress.test, files.egress.test, sneaky.egress.test], deny: [10.199.0.2/32:9]}
    bob: {mode: open}'
	out=$(alice_curl "$eg_url")
	want "$out" "$(cat /srv/egress/hello.txt)"
	out=$(alice_curl -p "$eg_url") # the same through a CONNECT tunnel
	want "$out" "$(cat /srv/egress/hello.txt)"
	out=$(eg_wait_audit 2 AGOR_USER=alice AGOR_HOST=files.egress.test AGOR_DECISION=allowed)
	echo "journal: $out"
	[ "$(grep -c 'reason=allow files.egress.test' <<<"$out")" -ge 2 ]
	grep -qE 'bytes_down=[1-9]' <<<"$out"
	# A listed name that resolves to a denied address is refused by the address.
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: [model.egress.test, files.egress.test, sneaky.egress.test], deny: [10.199.0.2]}
    bob: {mode: open}'
	out=$(alice_curl -o /dev/null -w '%{http_code}' http://sneaky.egress.test:18080/files/hello.txt 2>&1 || true)
	want "$out" 403
	eg_wait_audit 1 AGOR_USER=alice AGOR_HOST=sneaky.egress.test | grep 'reason=deny 10.199.0.2'
}
check "egress: through the proxy a host not listed is refused (403) and audited as denied in the journal and audit.jsonl; listed without a restart it is fetched (plain and CONNECT), audited with its bytes; a listed name resolving to a denied address is refused" eg_proxy

eg_git() {
	eg_since=$(date +%s)
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: [model.egress.test, files.egress.test]}
    bob: {mode: open}'
	rm -rf /srv/egress/repo.git /tmp/eg-src /home/alice/eg-clone
	git init -q /tmp/eg-src
	echo "through the egress service" >/tmp/eg-src/README
	git -C /tmp/eg-src add README
	git -C /tmp/eg-src -c user.name=suite -c user.email=suite@agortest commit -qm one
	git clone -q --bare /tmp/eg-src /srv/egress/repo.git
	git -C /srv/egress/repo.git update-server-info # dumb HTTP, served by the file server
	as alice agorctl exec alice -- git clone -q http://files.egress.test:18080/files/repo.git eg-clone </dev/null
	want "$(cat /home/alice/eg-clone/README)" "through the egress service"
	out=$(eg_wait_audit 1 AGOR_USER=alice AGOR_HOST=files.egress.test AGOR_DECISION=allowed)
	sed -n 1,3p <<<"$out"
	grep -q . <<<"$out"
}
check "egress: git clones over HTTP in alice's executor through the proxy (it reads http_proxy), audited" eg_git

# eg_npm: npm (the host's, at /opt/npm) reads a package's metadata from a
# registry of static files on the private network.
eg_npm() {
	eg_since=$(date +%s)
	mkdir -p /srv/egress/registry
	cat >/srv/egress/registry/agor-egress-demo <<'JSON'
{"name":"agor-egress-demo","dist-tags":{"latest":"1.2.3"},"versions":{"1.2.3":{"name":"agor-egress-demo","version":"1.2.3","dist":{"tarball":"http://files.egress.test:18080/files/registry/agor-egress-demo-1.2.3.tgz"}}}}
JSON
	ln -sf /opt/node/node /usr/local/bin/node
	local out
	out=$(as alice agorctl exec alice -- /opt/node/node /opt/npm/bin/npm-cli.js view agor-egress-demo version \
		--registry http://files.egress.test:18080/files/registry/ --cache /tmp/eg-npm-cache --no-update-notifier \
		</dev/null 2>&1) || { echo "npm view failed: $out"; eg_audit AGOR_USER=alice; return 1; }
	want "$out" 1.2.3
	grep -q 'reason=allow files.egress.test' <<<"$(eg_wait_audit 1 AGOR_USER=alice AGOR_HOST=files.egress.test AGOR_DECISION=allowed)"
	echo "npm view through the proxy: $out"
}
check "egress: npm in alice's executor reaches a registry through the proxy (it reads the proxy variables), audited" eg_npm

# pip, from a package index of the checks' (a wheel it makes and a simple
# index page): the proxy variables are all pip has, in the namespace.
eg_pip() {
	eg_since=$(date +%s)
	mkdir -p /srv/egress/simple/agor-egress-demo
	python3 - <<'PY'
import zipfile
info = "agor_egress_demo-1.2.3.dist-info/"
with zipfile.ZipFile("/srv/egress/agor_egress_demo-1.2.3-py3-none-any.whl", "w") as z:
    z.writestr("agor_egress_demo/__init__.py", "")
    z.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: agor-egress-demo\nVersion: 1.2.3\n")
    z.writestr(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: agor-suite\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(info + "RECORD", "")
PY
	echo '<!DOCTYPE html><html><body><a href="/files/agor_egress_demo-1.2.3-py3-none-any.whl">agor_egress_demo-1.2.3-py3-none-any.whl</a></body></html>' \
		>/srv/egress/simple/agor-egress-demo/index.html
	local out
	out=$(as alice agorctl exec alice -- python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check \
		--index-url http://files.egress.test:18080/files/simple/ --trusted-host files.egress.test -d /tmp/eg-pip agor-egress-demo \
		</dev/null 2>&1) || { echo "pip download failed: $out"; eg_audit AGOR_USER=alice; return 1; }
	grep 'Saved .*agor_egress_demo-1.2.3-py3-none-any.whl' <<<"$out"
	eg_wait_audit 2 AGOR_USER=alice AGOR_HOST=files.egress.test AGOR_DECISION=allowed | grep 'reason=allow files.egress.test' | tail -n 2
}
check "egress: pip in alice's executor downloads from a package index through the proxy (it reads the proxy variables), audited" eg_pip

# A confined task (Landlock, seccomp refusing AF_UNIX) still reaches the
# proxy port: TCP on loopback, which neither restricts.
eg_confined() {
	as alice install -d /home/alice/eg /home/alice/eg/box
	local out
	out=$(as alice agorctl exec alice --sandbox workspace --cwd eg/box -- curl -sS --max-time 10 "$eg_url" </dev/null)
	want "$out" "$(cat /srv/egress/hello.txt)"
	echo "a --sandbox workspace exec fetched it through the proxy: $out"
}
check "egress: a confined exec (--sandbox workspace) of alice's still reaches the proxy port" eg_confined

# Package installs into a confined task's workspace: npm and pip from the
# checks' registry and index (eg_npm, eg_pip), their caches in the task's
# private temp (the person's own are read-only in the view).
eg_confined_install() {
	local tgz=/tmp/eg-npm-pkg out rc=0
	rm -rf "$tgz" /home/alice/eg/inst
	mkdir -p "$tgz/package"
	echo '{"name":"agor-egress-demo","version":"1.2.3","main":"index.js"}' >"$tgz/package/package.json"
	echo 'module.exports = "demo";' >"$tgz/package/index.js"
	tar -C "$tgz" -czf /srv/egress/registry/agor-egress-demo-1.2.3.tgz package
	as alice install -d /home/alice/eg/inst
	out=$(as alice agorctl exec alice --sandbox workspace --cwd eg/inst -- /opt/node/node /opt/npm/bin/npm-cli.js install agor-egress-demo \
		--registry http://files.egress.test:18080/files/registry/ --no-update-notifier --no-audit --no-fund </dev/null 2>&1) ||
		{ echo "npm install, confined: $out"; rc=1; }
	want "$(stat -c %U /home/alice/eg/inst/node_modules/agor-egress-demo/index.js 2>&1)" alice || rc=1
	out=$(as alice agorctl exec alice --sandbox workspace --cwd eg/inst -- python3 -m pip install --no-deps --disable-pip-version-check \
		--target py --index-url http://files.egress.test:18080/files/simple/ --trusted-host files.egress.test agor-egress-demo </dev/null 2>&1) ||
		{ echo "pip install, confined: $out"; rc=1; }
	want "$(stat -c %U /home/alice/eg/inst/py/agor_egress_demo/__init__.py 2>&1)" alice || rc=1
	[ ! -e /home/alice/.npm/_cacache ] || [ "$(find /home/alice/.npm -newer "$tgz/package/index.js" | head -n 1)" = "" ] ||
		{ echo "the confined npm wrote alice's own cache"; rc=1; }
	echo "confined: npm installed $(ls /home/alice/eg/inst/node_modules | tr '\n' ' ')and pip $(ls /home/alice/eg/inst/py | tr '\n' ' ')into eg/inst, as alice"
	return $rc
}
check "egress: a confined exec installs npm and pip packages into its workspace, their caches in its private temp (shipped unit)" eg_confined_install

# eg_probe: from inside alice's executor, each way around the proxy: a
# UDP datagram (DNS) and TCP to the host's side of the veth, IPv6, a raw
# socket; prints one "NAME: outcome" line each.
eg_probe='
import socket
def t(name, f):
    try:
        f(); print(name + ": REACHED")
    except OSError as e:
        print(name + ": " + (e.strerror or str(e)))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("10.199.0.2", 53))
def tcp():
    socket.create_connection(("10.199.0.1", 22), timeout=3)
def v6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM); s.settimeout(3); s.connect(("fd00::1", 80))
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
def dns():
    socket.getaddrinfo("example.invalid", 80)
for n, f in (("udp", udp), ("tcp-host", tcp), ("ipv6", v6), ("raw", raw), ("dns", dns)):
    t(n, f)
'
eg_ways_around() {
	local out
	out=$(as alice agorctl exec alice -- python3 -c "$eg_probe" </dev/null)
	echo "$out"
	if grep REACHED <<<"$out"; then return 1; fi
	# bob cannot use alice's proxy port: it is in her namespace, not his.
	if out=$(as bob agorctl exec bob -- curl -sS --max-time 5 -x http://127.0.0.1:3128 "$eg_url" </dev/null 2>&1); then
		echo "bob used a proxy on 127.0.0.1:3128: $out"
		return 1
	fi
	echo "bob, through 127.0.0.1:3128: $out"
}
check "egress: the ways around the proxy from alice's executor fail (UDP, DNS, TCP to the host, IPv6, raw socket), and bob cannot use her proxy port" eg_ways_around

# Her own user manager (systemd --user, lingering or from a login) runs
# outside her executor's namespace: asked over /run/user/UID/bus to start a
# command, it would run it with the host's network. Shown possible from
# outside the executor first, so that the refusal inside means something.
eg_user_manager() {
	local uid out
	uid=$(id -u alice)
	# What lingering or a login starts (loginctl enable-linger needs logind,
	# which Debian 13's container does not answer over varlink here).
	systemctl start "user@$uid.service"
	for _ in $(seq 100); do [ -S "/run/user/$uid/systemd/private" ] && break; sleep 0.1; done
	out=$(as alice env XDG_RUNTIME_DIR="/run/user/$uid" systemd-run --user --wait --pipe --quiet \
		curl -sS --noproxy '*' --max-time 5 http://10.199.0.2:18080/files/hello.txt </dev/null 2>&1)
	want "$out" "$(cat /srv/egress/hello.txt)"
	echo "alice's user manager, asked from outside agor, fetches directly: $out"
	if out=$(as alice agorctl exec alice -- env XDG_RUNTIME_DIR="/run/user/$uid" systemd-run --user --wait --pipe --quiet \
		curl -sS --noproxy '*' --max-time 5 http://10.199.0.2:18080/files/hello.txt </dev/null 2>&1); then
		echo "alice's executor had her user manager fetch it: $out"
		systemctl stop "user@$uid.service"
		return 1
	fi
	echo "from her executor (proxy): $out"
	systemctl stop "user@$uid.service"
}
check "egress: alice's executor under proxy cannot have her own user manager (systemd --user) run a command outside its network namespace" eg_user_manager

# eg_turn_failed FROM: what the stand-in and the egress service saw of a
# turn that failed (the stand-in's log from line FROM on).
eg_turn_failed() {
	echo "the stand-in's requests:"
	tail -n +"$(($1 + 1))" /tmp/eg-model.log | tail -n 20
	echo "the egress service's records:"
	eg_audit AGOR_USER=alice | tail -n 10
	echo "the egress path's journal, with its fields:"
	eg_detail
	echo "alice's executor:"
	journalctl --no-pager -q --since "@$eg_since" -u agor-executor@alice.service | tail -n 20
}

# eg_detail: the daemon's and alice's executor's egress lines since
# eg_since with their fields (which end cut a response off, and how).
eg_detail() {
	journalctl --no-pager -o json --since "@$eg_since" -u agor-daemon.service -u agor-executor@alice.service | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    m = e.get("MESSAGE") or ""
    if not isinstance(m, str) or not any(k in m for k in ("egress", "relay", "ReverseProxy", "cut off")) or m.startswith("audit "):
        continue
    f = " ".join("%s=%s" % (k[5:].lower(), v) for k, v in sorted(e.items()) if k.startswith("AGOR_") and isinstance(v, str))
    print((e.get("_SYSTEMD_UNIT", "?") + ": " + m + " " + f)[:3000])
' | tail -n 12
}

eg_prompt() {
	eg_since=$(date +%s)
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: [model.egress.test]}
    bob: {mode: open}'
	eg_nogateway
	cat >/etc/agor/agents.yaml <<'YAML'
claude-code:
  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  env:
    ANTHROPIC_BASE_URL: http://model.egress.test:18080
    CLAUDE_CODE_MAX_RETRIES: "0"
YAML
	printf 'sk-ant-suite-0123456789\n' | agorctl creds set ANTHROPIC_API_KEY --daemon >/dev/null
	systemctl stop agor-executor@alice.service # read agents.yaml afresh
	as alice install -d /home/alice/eg /home/alice/eg/prompt # a project of its own: no earlier sessions there
	rm -f /home/alice/eg/prompt/egress.txt
	local out
	local model_lines
	model_lines=$(wc -l </tmp/eg-model.log)
	out=$(as alice agorctl prompt alice 'egress turn' --mode bypassPermissions --cwd eg/prompt 2>&1 </dev/null) || {
		echo "$out" | tail -n 5
		eg_turn_failed "$model_lines"
		return 1
	}
	echo "$out" | sed -n '1,3p;$p'
	grep -q '^completed' <<<"$out"
	# Every request of the turn streamed: a CLI whose stream broke on the
	# way asks again without streaming, and may still complete.
	if tail -n +"$((model_lines + 1))" /tmp/eg-model.log | grep 'stream=false'; then
		eg_turn_failed "$model_lines"
		return 1
	fi
	want "$(cat /home/alice/eg/prompt/egress.txt)" alice
	out=$(eg_wait_audit 2 AGOR_USER=alice AGOR_HOST=model.egress.test AGOR_DECISION=allowed)
	echo "journal: $out"
	grep -q 'port=18080' <<<"$out"
	grep -qE 'bytes_down=[1-9]' <<<"$out"
	grep -qE 'task=[0-9a-f]+' <<<"$out" # the agent's proxy URL names its session; the daemon its running task
	# Her bytes, in agorctl executors and /v1/metrics.
	agorctl executors | grep -E '^(USER|alice) '
	grep -qE '^alice .* proxy +[0-9.]+[BKMG]/[0-9.]+[BKMG]' <<<"$(agorctl executors)"
	curl -s --unix-socket /run/agor/daemon.sock http://agor/v1/metrics | grep -E '^agor_egress_(bytes|connections)_total\{user="alice"' | tee /tmp/eg-metrics.txt
	grep -qE '^agor_egress_bytes_total\{user="alice",direction="down"\} [1-9]' /tmp/eg-metrics.txt
}
check "egress: alice under proxy completes a prompt with a tool turn of the real Claude Code, which reached the stand-in model through the egress service (audited with its task and bytes)" eg_prompt

# eg_four: each of the four real CLIs, against its stand-in on the private
# network (Responses for codex, Gemini, chat for opencode), through the
# egress service; prints "TOOL: outcome, egress lines" and fails on any
# that did not complete or whose model was not reached through it.
eg_four() {
	eg_since=$(date +%s)
	eg_config 'network:
  users:
    alice: {mode: proxy, allow: ["model.egress.test"]}
    bob: {mode: open}'
	eg_nogateway
	local api port cmd='id -un > egress.txt' tool out bad=0 prompt log
	# A fresh Anthropic stand-in: its script is a sequence of turns.
	kill "$(cat /tmp/eg-model.pid)" 2>/dev/null || true
	rm -f /tmp/eg-model.url
	sleep 0.2
	eg_up
	for api in openai-responses:18081 gemini:18082 openai-chat:18083; do
		port=${api#*:}
		api=${api%%:*}
		[ -s "/tmp/eg-$api.url" ] && continue
		ip netns exec "$eg_ns" "$T/demomodel" -log -api "$api" -listen "10.199.0.2:$port" -bash "$cmd" -text 'done.' >"/tmp/eg-$api.url" 2>"/tmp/eg-$api.log" &
		echo $! >"/tmp/eg-$api.pid"
	done
	for _ in $(seq 50); do [ -s /tmp/eg-openai-chat.url ] && [ -s /tmp/eg-gemini.url ] && [ -s /tmp/eg-openai-responses.url ] && break; sleep 0.1; done
	ln -sf /opt/node/node /usr/local/bin/node # gemini is a Node.js program
	cat >/etc/agor/agents.yaml <<'YAML'
claude-code:
  binary: /opt/agents/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe
  env:
    ANTHROPIC_BASE_URL: http://model.egress.test:18080
    CLAUDE_CODE_MAX_RETRIES: "0"
codex:
  binary: /opt/agents/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
  env:
    AGOR_CODEX_BASE_URL: http://model.egress.test:18081/v1
    CODEX_HOME: /home/alice/eg/codex-home
gemini:
  binary: /opt/agents/gemini/node_modules/.bin/gemini
  env:
    GOOGLE_GEMINI_BASE_URL: http://model.egress.test:18082
opencode:
  binary: /opt/agents/opencode/node_modules/opencode-ai/bin/opencode.exe
  env:
    AGOR_OPENCODE_BASE_URL: http://model.egress.test:18083/v1
YAML
	# codex's config.toml is written once per CODEX_HOME: the modes checks
	# left one in ~/.codex naming their loopback stand-in.
	rm -rf /home/alice/eg/codex-home
	printf 'sk-oai-suite-0123456789\n' | agorctl creds set OPENAI_API_KEY --daemon >/dev/null
	printf 'gm-suite-0123456789\n' | agorctl creds set GEMINI_API_KEY --daemon >/dev/null
	systemctl stop agor-executor@alice.service # read agents.yaml afresh
	for tool in claude-code codex gemini opencode; do
		port=$(case $tool in claude-code) echo 18080 ;; codex) echo 18081 ;; gemini) echo 18082 ;; opencode) echo 18083 ;; esac)
		as alice install -d "/home/alice/eg" "/home/alice/eg/$tool"
		rm -f "/home/alice/eg/$tool/egress.txt"
		prompt="run it. $cmd"
		case $tool in gemini | opencode) prompt="run the shell command: $cmd" ;; esac
		eg_since=$(date +%s)
		out=$(as alice agorctl prompt alice "$prompt" --tool "$tool" --mode bypassPermissions --cwd "eg/$tool" 2>&1 </dev/null || true)
		# A tunnel is recorded when it closes, and a warm agent keeps its
		# own open: stop the executor (and its agents) first.
		systemctl stop agor-executor@alice.service 2>/dev/null
		lines=$(eg_wait_audit 1 AGOR_USER=alice AGOR_HOST=model.egress.test AGOR_PORT="$port" | grep -c 'decision=allowed' || true)
		eg_audit AGOR_USER=alice | { grep -o 'host=[^ ]*\|port=[^ ]*\|decision=[^ ]*' || true; } | paste -sd' ' | sed "s/^/  $tool's egress: /"
		ran=$(cat "/home/alice/eg/$tool/egress.txt" 2>/dev/null || echo "no file")
		echo "$tool: $(grep -o '^completed' <<<"$out" || tail -n 1 <<<"$out" | cut -c1-200); egress.txt: $ran; egress records to its model: $lines"
		if ! { [ "$ran" = alice ] && [ "$lines" -gt 0 ] && grep -q '^completed' <<<"$out"; }; then
			bad=1
			tail -n 8 <<<"$out" | sed "s/^/  $tool said: /"
			log=/tmp/eg-model.log
			case $tool in codex) log=/tmp/eg-openai-responses.log ;; gemini) log=/tmp/eg-gemini.log ;; opencode) log=/tmp/eg-openai-chat.log ;; esac
			tail -n 8 "$log" 2>/dev/null | sed "s/^/  its stand-in: /"
			eg_detail | sed "s/^/  journal: /"
		fi
	done
	return $bad
}
check "egress: the four real CLIs (claude-code, codex, gemini, opencode) complete a turn with a tool call under proxy, their stand-in models reached only through the egress service" eg_four

# eg_unix asks the daemon's egress socket for a tunnel, as any process of
# the person's could; prints the status line.
eg_unix='
import socket
s = socket.socket(socket.AF_UNIX)
s.connect("/run/agor/egress.sock")
s.sendall(b"CONNECT files.egress.test:18080 HTTP/1.1\r\nHost: files.egress.test:18080\r\n\r\n")
print(s.recv(200).split(b"\r\n")[0].decode())
'
eg_none() {
	eg_since=$(date +%s)
	eg_config 'network:
  users:
    alice: {mode: none, allow: ["*"]}
    bob: {mode: open}'
	agorctl network apply
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" yes
	local out
	for url in "$eg_url" http://10.199.0.2:18080/files/hello.txt; do
		if out=$(alice_curl "$url" 2>&1); then echo "alice (none) fetched $url: $out"; return 1; fi
		echo "alice (none), $url: $out"
	done
	if out=$(alice_curl -x http://127.0.0.1:3128 "$eg_url" 2>&1); then echo "a proxy port answered: $out"; return 1; fi
	echo "alice (none), through 127.0.0.1:3128: $out"
	# Straight to the daemon's egress socket: it knows her, and her mode.
	out=$(as alice agorctl exec alice -- python3 -c "$eg_unix" </dev/null)
	want "$out" "HTTP/1.1 403 Forbidden"
	eg_wait_audit 1 AGOR_USER=alice AGOR_DECISION=denied | grep 'reason=mode none'
}
check "egress: alice under none reaches nothing: not directly, no proxy port, and the daemon's egress socket asked directly refuses her (mode none)" eg_none

eg_fail_closed() {
	eg_config 'network:
  users:
    alice: {mode: none}
    bob: {mode: open}
    user01: {mode: proxy, allow: [files.egress.test]}'
	systemctl stop agor-executor@user01.socket agor-executor@user01.service 2>/dev/null || true
	local out
	if out=$(agorctl exec user01 -- true 2>&1 </dev/null); then echo "served user01 without PrivateNetwork"; return 1; fi
	echo "before apply: $out"
	grep -q 'agorctl network apply' <<<"$out"
	agorctl network apply
	out=$(agorctl exec user01 -- curl -sS --max-time 10 "$eg_url" </dev/null)
	want "$out" "$(cat /srv/egress/hello.txt)"
}
check "egress: fail closed: a person under proxy whose unit lacks PrivateNetwork=yes is refused, naming agorctl network apply; after it they are served through the proxy" eg_fail_closed

eg_down() {
	reconfigure 50-egress # and the gateway back on: the daemon restarted
	cp /etc/agor/agents.yaml.eg-orig /etc/agor/agents.yaml
	agorctl network apply
	[ -z "$(ls -d /etc/systemd/system/agor-executor@*.service.d 2>/dev/null)" ] || { ls -R /etc/systemd/system/agor-executor@*.service.d; return 1; }
	want "$(systemctl show -p PrivateNetwork --value agor-executor@alice.service)" no
	local f
	for f in /tmp/eg-*.pid; do kill "$(cat "$f")" 2>/dev/null || true; done
	rm -f /tmp/eg-*.url
}
check "egress: the configuration put back, agorctl network apply removes every drop-in" eg_down
