// Package netunit writes the systemd drop-ins that put each person's
// network mode in force: PrivateNetwork= is not a runtime property, so
// `agorctl network apply` (as root) writes them, reloads systemd and
// restarts the executors whose namespace changes.
//
// The default's drop-in goes on the template
// (agor-executor@.service.d/), every person whose mode differs from the
// default gets one of their own (agor-executor@USER.service.d/), which
// systemd applies after the template's.
package netunit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/account"
	"github.com/agor-sh/agor/internal/config"
)

// FileName is the drop-in's name in each directory.
const FileName = "50-agor-network.conf"

// header says who wrote the file, so nobody edits it by hand.
const header = "# Written by `agorctl network apply` from the network section of\n# /etc/agor/config.yaml; edits here are replaced at its next run.\n"

// hideUserManager keeps the person's own user manager (systemd --user,
// over /run/user/UID: its D-Bus and private sockets) out of reach: it runs
// outside the executor's network namespace, and `systemd-run --user`
// would start any command there, with the host's network. An executor
// needs nothing under /run/user (a system unit has no XDG_RUNTIME_DIR).
const hideUserManager = "InaccessiblePaths=-/run/user\n"

// Dropin is the drop-in that gives an executor set's mode: a namespace of
// its own for proxy and none, the relay to the egress service for proxy.
func Dropin(set config.NetworkSet, n config.Network) string {
	var b strings.Builder
	b.WriteString(header)
	fmt.Fprintf(&b, "# network mode: %s\n[Service]\n", set.Mode)
	switch set.Mode {
	case config.NetworkProxy:
		b.WriteString("PrivateNetwork=yes\n" + hideUserManager)
		fmt.Fprintf(&b, "Environment=AGOR_EXECUTOR_EGRESS_SOCKET=%s AGOR_EXECUTOR_EGRESS_PORT=%d\n", n.SocketPath, n.ProxyPort)
	case config.NetworkNone:
		b.WriteString("PrivateNetwork=yes\n" + hideUserManager + "Environment=AGOR_EXECUTOR_EGRESS_SOCKET=\n")
	default: // an empty InaccessiblePaths= resets what a template's drop-in set
		b.WriteString("PrivateNetwork=no\nInaccessiblePaths=\nEnvironment=AGOR_EXECUTOR_EGRESS_SOCKET=\n")
	}
	return b.String()
}

// Plan is what apply writes: the template's drop-in ("" : none) and each
// person's ("" : none, removed if there).
type Plan struct {
	Template string
	Users    map[string]string
}

// MakePlan decides the drop-ins for users (each with their effective
// set): the template carries the default, a person whose mode differs
// gets their own.
func MakePlan(n config.Network, users map[string]config.NetworkSet) Plan {
	p := Plan{Users: map[string]string{}}
	if n.Default.Private() {
		p.Template = Dropin(n.Default, n)
	}
	for u, set := range users {
		p.Users[u] = ""
		if set.Mode != n.Default.Mode {
			p.Users[u] = Dropin(set, n)
		}
	}
	return p
}

// executorPrefix names the host's executor units (PREFIX@USER.service).
const executorPrefix = "agor-executor"

// Dir is unitDir's drop-in directory for user ("" : the template).
func Dir(unitDir, user string) string { return dirOf(unitDir, executorPrefix, user) }

func dirOf(unitDir, prefix, user string) string {
	inst := ""
	if user != "" {
		inst = account.Escape(user)
	}
	return filepath.Join(unitDir, prefix+"@"+inst+".service.d")
}

// Existing are the users that have a drop-in of ours in unitDir.
func Existing(unitDir string) ([]string, error) { return existingOf(unitDir, executorPrefix) }

func existingOf(unitDir, prefix string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(unitDir, prefix+"@?*.service.d", FileName))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		inst := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(filepath.Dir(m)), prefix+"@"), ".service.d")
		if u, err := account.Unescape(inst); err == nil {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Write puts p in unitDir and reports the users whose drop-in changed
// ("" for the template).
func Write(unitDir string, p Plan) ([]string, error) {
	var changed []string
	if c, err := put(Dir(unitDir, ""), p.Template); err != nil {
		return changed, err
	} else if c {
		changed = append(changed, "")
	}
	users := make([]string, 0, len(p.Users))
	for u := range p.Users {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		c, err := put(Dir(unitDir, u), p.Users[u])
		if err != nil {
			return changed, err
		}
		if c {
			changed = append(changed, u)
		}
	}
	return changed, nil
}

// put writes content as dir's drop-in (atomically), or removes it (and
// the directory, when empty) for "".
func put(dir, content string) (bool, error) {
	path := filepath.Join(dir, FileName)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if content == "" {
		if err != nil {
			return false, nil
		}
		if err := os.Remove(path); err != nil {
			return false, err
		}
		_ = os.Remove(dir) // only if empty: an operator's own drop-ins stay
		return true, nil
	}
	if err == nil && string(old) == content {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	tmp := path + ".new" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}
