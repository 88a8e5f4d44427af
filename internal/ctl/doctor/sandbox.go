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
	prompts := s.Prompts
	if prompts == "" {
		prompts = s.Default
	}
	policy := fmt.Sprintf("prompts %s, default %s, allowed %v, required %v", prompts, s.Default, s.Allowed, s.Required)
	if abi > 0 {
		return ok("Landlock ABI %d in %s; sandbox %s", abi, where, policy)
	}
	confinable := s.Default != "off" || prompts != "off" || len(s.Allowed) == 0 || slices.ContainsFunc(s.Allowed, func(l string) bool { return l != "off" })
	switch {
	case !confinable:
		return ok("no Landlock in %s; sandbox %s: no level but off can be asked for", where, policy)
	case s.Required && (s.Default != "off" || prompts != "off"):
		return fail("set sandbox.prompts and sandbox.default to off, or give the executors Landlock (kernel lsm=...,landlock; a container's seccomp filter must allow landlock_*)",
			"Landlock ABI 0 in %s, and sandbox %s: every prompt that names no level would be refused", where, policy)
	case s.Required:
		return warn("Landlock ABI 0 in %s, sandbox %s: work asking for confinement (and codex in its default modes) is refused", where, policy)
	}
	return warn("Landlock ABI 0 in %s, sandbox %s: confined work runs unconfined, with a warning (sandbox.required: true refuses it)", where, policy)
}

// checkSandboxView says which of the sandbox's guarantees hold where
// tasks run: with the namespace view, the filesystem outside the
// workspace (contents and metadata), the workspace's protected paths and
// signals hold on any Landlock ABI; without it they rest on Landlock,
// which governs no metadata and scopes signals only from ABI 6.
func checkSandboxView(ctx context.Context, d *Doctor) Finding {
	if d.cfg == nil {
		return skip("no configuration read")
	}
	if d.executorView == nil {
		return skip("no executor to ask")
	}
	view, answered := d.executorView(ctx, d.sample)
	switch {
	case !answered:
		return skip("%s's executor did not answer", d.sample)
	case view == "namespace":
		return ok("%s's executor builds each confined task's view in namespaces: nothing outside its workspace changes (contents, modes, ACLs, times), its project settings are read-only, signals stay in the task, on any Landlock ABI", d.sample)
	case view == "":
		return warn("%s's executor does not say whether it can build a task's view (an older executor): confinement rests on Landlock alone", d.sample)
	}
	guarantees := "a confined task can still change modes, ACLs and times outside its workspace and its project settings"
	if d.cfg.Sandbox.Required {
		return fail("allow the executor user, mount and PID namespaces (the shipped unit does; on Ubuntu 24.04 load /etc/apparmor.d/agor-executor)",
			"%s's executor cannot build a task's view (%s): sandbox.required refuses confined work", d.sample, view)
	}
	return warn("%s's executor cannot build a task's view (%s): %s", d.sample, view, guarantees)
}
