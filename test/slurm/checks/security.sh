# What a compute node's neighbours cannot do: reach an executor (it never
# listens), or dial in with a forged token or as someone else.
check "the executor listens on no TCP port on its node" bash -c '
	node=$(inside login squeue -h -u alice -o %N | head -n1)
	! inside "$node" ss -Htlnp | grep agor-executor'
check "a forged token is refused" want '"error"' hello "$(head -c 32 /dev/urandom | base64 | tr -d '=+/' | head -c 43)" alice 1
check "bob's own job cannot dial in as alice" bash -c '
	as login bob agorctl exec bob -- true >/dev/null || exit 1
	job=$(inside login squeue -h -u bob -o %i | head -n1)
	# bob owns his job and could read its script; its token is bound to him.
	tok=$(inside login scontrol write batch_script "$job" - 2>/dev/null | sed -n "/AGOR_TOKEN/{n;p;q}")
	[ -n "$tok" ] || { echo "no token in the script of job $job"; exit 1; }
	out=$(hello "$tok" alice "$job"); echo "$out"; echo "$out" | grep "\"error\"" >/dev/null'
