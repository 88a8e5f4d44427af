package doctor

import (
	"context"
	"fmt"
)

// checkSandbox reports the kernel's Landlock ABI and the configured
// sandbox policy, and warns when they do not fit together.
func checkSandbox(_ context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	s := d.cfg.Sandbox
	abi := d.landlock()
	policy := fmt.Sprintf("default %s, allowed %v, required %v", s.Default, s.Allowed, s.Required)
	if abi == 0 && s.Default != "off" {
		if s.Required {
			return fail("set sandbox.default: off, or run a kernel with Landlock (CONFIG_SECURITY_LANDLOCK, lsm=...,landlock)",
				"Landlock ABI 0 (this kernel has none), and sandbox %s: every task would be refused", policy)
		}
		return warn("Landlock ABI 0 (this kernel has none): sandbox %s runs tasks unconfined, with a warning", policy)
	}
	return ok("Landlock ABI %d; sandbox %s", abi, policy)
}
