package doctor

import (
	"context"
	"fmt"
	"slices"
)

// checkSandbox reports the Landlock ABI where tasks run (the sample
// user's executor, under its unit; agorctl's own process only when no
// executor answers) and the configured sandbox policy, and says when
// confinement asked for would not be enforced.
func checkSandbox(ctx context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	s := d.cfg.Sandbox
	abi, where := d.landlock(), "agorctl's own process (no executor answered)"
	if d.executorLandlock != nil {
		if a, ok := d.executorLandlock(ctx, d.sample); ok {
			abi, where = a, d.sample+"'s executor"
		}
	}
	policy := fmt.Sprintf("default %s, allowed %v, required %v", s.Default, s.Allowed, s.Required)
	if abi > 0 {
		return ok("Landlock ABI %d in %s; sandbox %s", abi, where, policy)
	}
	confinable := s.Default != "off" || len(s.Allowed) == 0 || slices.ContainsFunc(s.Allowed, func(l string) bool { return l != "off" })
	switch {
	case !confinable:
		return ok("no Landlock in %s; sandbox %s: no level but off can be asked for", where, policy)
	case s.Required && s.Default != "off":
		return fail("set sandbox.default: off, or give the executors Landlock (kernel lsm=...,landlock; a container's seccomp filter must allow landlock_*)",
			"Landlock ABI 0 in %s, and sandbox %s: every task would be refused", where, policy)
	case s.Required:
		return warn("Landlock ABI 0 in %s, sandbox %s: work asking for confinement (and codex in its default modes) is refused", where, policy)
	}
	return warn("Landlock ABI 0 in %s, sandbox %s: confined work runs unconfined, with a warning (sandbox.required: true refuses it)", where, policy)
}
