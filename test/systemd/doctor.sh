# agorctl doctor on the installed package. Sourced by checks.sh (uses lib.sh).

# doctor_until RC [REGEX]: runs agorctl doctor (as root) until it exits RC
# with a line matching REGEX, for up to 10 s (polkitd re-reads rules.d on
# its own), leaving its output in $out.
doctor_until() {
	local i rc
	for i in $(seq 50); do
		rc=0
		out=$(agorctl doctor 2>&1) || rc=$?
		[ "$rc" = "$1" ] && grep -qE "${2:-.}" <<<"$out" && return 0
		sleep 0.2
	done
	echo "agorctl doctor exited $rc, want $1${2:+ with a line matching $2}:"
	echo "$out"
	return 1
}
doctor_check() {
	local out rule=/usr/share/polkit-1/rules.d/50-agor.rules
	out=$(agorctl doctor) || { echo "$out"; return 1; }
	echo "$out"
	if grep -vE '^(ok|warn) ' <<<"$out"; then echo "lines above are neither ok nor warn"; return 1; fi
	mv "$rule" /root/50-agor.rules.away
	trap 'mv /root/50-agor.rules.away '"$rule"' 2>/dev/null' EXIT # put back whatever fails
	doctor_until 1 '^FAIL +polkit-effective' # polkitd has dropped the rule
	echo "# without $rule:"
	echo "$out"
	grep -E '^FAIL +polkit-rule .*50-agor\.rules' <<<"$out" >/dev/null
	grep -E '^ +fix: .*reinstall' <<<"$out" >/dev/null
	mv /root/50-agor.rules.away "$rule"
	trap - EXIT
	doctor_until 0
	echo "# rule back: agorctl doctor exits 0 again"
}
check "agorctl doctor as root: all ok/warn; without the polkit rule exit 1 naming it, fix line; passes again with it back" doctor_check
