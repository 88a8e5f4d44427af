# Sourced by run.sh (in a subshell) once the cluster is up: runs each
# concern file of checks/ in order, with the helpers below, on the host;
# `inside NODE CMD` reaches into a node. AGOR_SLURM_ONLY="cluster ..."
# runs a subset.
pass=0 fail=0
check() { # NAME CMD...: one check, its output kept for a failure
	local name=$1 out; shift
	if out=$("$@" 2>&1); then
		pass=$((pass + 1)); echo "ok   $name"
	else
		fail=$((fail + 1)); echo "FAIL $name"; printf '%s\n' "$out" | sed 's/^/     /' | tail -n 30
	fi
}
as() { # NODE USER CMD...: CMD as USER (a directory account) on NODE
	local n=$1 u=$2; shift 2
	inside "$n" setpriv --reuid="$u" --regid="$u" --init-groups env HOME="/home/$u" USER="$u" PATH=/usr/bin:/bin "$@"
}
want() { # PATTERN CMD...: CMD's output matches PATTERN (extended regexp)
	local pat=$1 out; shift
	out=$("$@" 2>&1) || { printf '%s\n' "$out"; return 1; }
	grep -E -- "$pat" >/dev/null <<<"$out" || { printf 'wanted /%s/ in:\n%s\n' "$pat" "$out"; return 1; }
}
hello() { # TOKEN USER JOB: one dial-back hello over TLS to the daemon, from node2
	inside node2 sh -c "printf '%s\n' '{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"hello\",\"params\":{\"token\":\"$1\",\"user\":\"$2\",\"job_id\":\"$3\"}}' |
		timeout 10 openssl s_client -quiet -verify_return_error -CAfile /etc/agor/dialback-ca.pem -connect 10.213.0.10:7443 2>/dev/null" || true
}
export work
export -f inside as want hello
order="cluster install executor prompt terminal security lifecycle timelimit bench"
for c in $order; do
	[ -z "${AGOR_SLURM_ONLY:-}" ] || [[ " $AGOR_SLURM_ONLY " == *" $c "* ]] || continue
	echo "== $c"
	phase "$c" . "test/slurm/checks/$c.sh"
done
echo "== $pass passed, $fail failed"
[ -z "${AGOR_COUNTS:-}" ] || echo "slurm $pass $fail" >>"$AGOR_COUNTS"
[ "$fail" = 0 ]
