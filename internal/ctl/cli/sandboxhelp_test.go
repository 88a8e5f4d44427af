package cli

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/sandbox"
)

// levelOf is the level the code gives work of kind ("prompt", or "exec"
// and "terminal") that asks for none under c, as the daemon resolves it
// (internal/daemon/api: sandboxLevel of PromptLevel for prompts).
func levelOf(t *testing.T, c config.Sandbox, kind string) string {
	p := sandbox.PolicyOf(c)
	requested := ""
	if kind == "prompt" || kind == "agent" { // both are prompt tasks
		requested = p.PromptLevel("")
	}
	l, err := p.Resolve(requested)
	if err != nil {
		t.Fatal(err)
	}
	return string(l)
}

// keyOf is what key (sandbox.prompts, sandbox.default) says under c, as
// the help reads it: an empty prompts means default.
func keyOf(t *testing.T, c config.Sandbox, key string) string {
	switch key {
	case "sandbox.prompts":
		if c.Prompts != "" {
			return c.Prompts
		}
		return c.Default
	case "sandbox.default":
		return c.Default
	}
	t.Fatalf("the help names %q, no key of the sandbox section", key)
	return ""
}

// The help's claims about defaults are the code's: which key gives a
// prompt, an exec and a terminal its level when it asks for none (its
// --sandbox flag's usage and the help's text), the built-in values
// (config.Default), and the packaged file's prompts.
func TestHelpDefaults(t *testing.T) {
	// Read with every run of white space one space: lines wrap anywhere.
	flagKey := regexp.MustCompile(`--sandbox level sandbox level[^(]*\(default: the daemon's (\S+)\)`)
	textKeys := regexp.MustCompile(`a prompt or an agent session gets the daemon's (\S+) \(when that is empty, (\S+)\), an exec or a terminal (\S+)\.`)
	builtIn := regexp.MustCompile(`Built in, sandbox\.default is "(\S+)", sandbox\.prompts (is empty|is "\S+") and sandbox\.required is (true|false);`)
	packaged := regexp.MustCompile(`packaged /etc/agor/config\.yaml sets prompts: (\S+)\.`)
	confs := []config.Sandbox{
		{Default: "off", Prompts: "workspace"}, {Default: "read-only", Prompts: ""}, {Default: "workspace", Prompts: "read-only"},
	}
	for _, kind := range []string{"prompt", "agent", "exec", "terminal"} {
		r := agorctl(context.Background(), closedStdin{t}, kind, "--help")
		help := strings.Join(strings.Fields(r.stdout), " ")
		claims := map[string]string{} // where the help says it: the key it names
		if m := flagKey.FindStringSubmatch(help); m != nil {
			claims["--sandbox's usage"] = m[1]
		}
		if m := textKeys.FindStringSubmatch(help); m != nil {
			claims["the help's text"] = map[string]string{"prompt": m[1], "agent": m[1], "exec": m[3], "terminal": m[3]}[kind]
			if c := (config.Sandbox{Default: "read-only"}); m[2] != "sandbox.default" || levelOf(t, c, "prompt") != c.Default {
				t.Errorf("an empty sandbox.prompts is said to mean %s", m[2])
			}
		}
		if len(claims) != 2 {
			t.Errorf("%s --help names the key of its default level in %d of its 2 places: %v", kind, len(claims), claims)
		}
		for where, key := range claims {
			for _, c := range confs {
				if got, want := levelOf(t, c, kind), keyOf(t, c, key); got != want {
					t.Errorf("%s: %s says %s gives the level (%s under %+v); the code gives %s", kind, where, key, want, c, got)
				}
			}
		}
		b, p := builtIn.FindStringSubmatch(help), packaged.FindStringSubmatch(help)
		if b == nil || p == nil {
			t.Fatalf("%s --help says nothing of the built-in or packaged defaults:\n%s", kind, r.stdout)
		}
		d := config.Default().Sandbox
		wantPrompts := map[bool]string{true: "is empty", false: `is "` + d.Prompts + `"`}[d.Prompts == ""]
		if b[1] != d.Default || b[2] != wantPrompts || b[3] != strconv.FormatBool(d.Required) {
			t.Errorf("%s --help: built in, default %s, prompts %s, required %s; config.Default has %q, %q, %v", kind, b[1], b[2], b[3], d.Default, d.Prompts, d.Required)
		}
		pkg, err := config.Load("../../../packaging/config.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if p[1] != pkg.Sandbox.Prompts {
			t.Errorf("%s --help: the packaged prompts is %s; packaging/config.yaml has %q", kind, p[1], pkg.Sandbox.Prompts)
		}
	}
}
