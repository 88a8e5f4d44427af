package terminal

import (
	"context"
	"os"
	"strings"

	"github.com/agor-sh/agor/internal/executor/childenv"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// passthrough names the executor's own variables a terminal inherits.
// Everything else stays behind: a service's environment may hold
// configuration and secrets (API keys) that are not the shell's business.
func passthrough(name string) bool {
	switch name {
	case "PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_RUNTIME_DIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// checkEnv refuses variables a child never receives (socket activation,
// notify, watchdog, agor's own); protocol has checked names and values.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if len(childenv.Build(nil, map[string]string{k: v})) == 0 {
			return rpc.InvalidParams("env", k+" may not be set")
		}
	}
	return nil
}

// account is the executor's user, as a terminal's environment names it.
type account struct {
	name, home, shell string
}

// currentAccount is the executor's user as the system's user database
// has it (directory accounts included); HOME and USER, which systemd's
// User= sets, stand in when it does not answer, and /bin/sh for a missing
// shell.
func currentAccount() account {
	a := account{name: os.Getenv("USER"), home: os.Getenv("HOME"), shell: "/bin/sh"}
	if u, err := identity.Default().LookupUID(context.Background(), uint32(os.Getuid())); err == nil {
		a.name, a.home = u.Name, u.Home
		if u.Shell != "" {
			a.shell = u.Shell
		}
	}
	return a
}

// buildEnv is a terminal's environment: the pass-through part of base,
// the login variables, defaults for TERM, LANG and PATH, then extra
// (already checked), all through childenv so nothing blocked slips in.
func buildEnv(base []string, a account, shell string, extra map[string]string) []string {
	kept := make([]string, 0, 8)
	for _, kv := range base {
		if k, _, ok := strings.Cut(kv, "="); ok && passthrough(k) {
			kept = append(kept, kv)
		}
	}
	set := map[string]string{
		"TERM": "xterm-256color", "HOME": a.home, "USER": a.name, "LOGNAME": a.name, "SHELL": shell,
	}
	have := map[string]bool{}
	for _, kv := range kept {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = true
	}
	if !have["LANG"] {
		set["LANG"] = "C.UTF-8"
	}
	if !have["PATH"] {
		set["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for k, v := range extra {
		set[k] = v
	}
	return childenv.Build(kept, set)
}
