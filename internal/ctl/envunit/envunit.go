// Package envunit renders an environment's units, agor-env-NAME@.socket
// and agor-env-NAME@.service, from the shipped executor units: the same
// User=, slice, restart rules and hardening, plus the root and what of
// the host is bound into it. Rendering from the installed files (not a
// copy kept here) keeps an environment's executor exactly as hardened as
// the host's, also after a package upgrade re-renders it.
package envunit

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/agor-sh/agor/internal/envdef"
)

// Shipped are the places the packaged executor units may be installed,
// in the order looked at.
var Shipped = []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system"}

// Prefix is env's unit prefix: agor-env-NAME, then @USER.service|socket.
func Prefix(env string) string { return "agor-env-" + env }

// Unit is env's template unit of kind ("service" or "socket").
func Unit(env, kind string) string { return Prefix(env) + "@." + kind }

// header says who wrote the file, so nobody edits it by hand.
const header = "# Written by `agorctl environments add` from the shipped agor-executor@\n# units and /etc/agor/environments/%s.yaml; edits here are replaced.\n"

// Render makes env's two units from the shipped service and socket texts.
func Render(service, socket string, d envdef.Definition) (svc, sock string, err error) {
	if err := d.Validate(); err != nil {
		return "", "", err
	}
	exe, err := execPath(service)
	if err != nil {
		return "", "", err
	}
	svc, err = rewrite(service, d, serviceBlock(d, exe))
	if err != nil {
		return "", "", err
	}
	sock, err = rewrite(socket, d, "")
	return svc, sock, err
}

// rewrite renames what names the executor's units, says which
// environment it is, moves the socket into the environment's directory
// and adds block after [Service].
func rewrite(text string, d envdef.Definition, block string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, header, d.Name)
	added := false
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		l = strings.ReplaceAll(l, "agor-executor@%i.", Prefix(d.Name)+"@%i.")
		switch {
		case strings.HasPrefix(l, "Description="):
			l += " in environment " + d.Name
		case strings.HasPrefix(l, "ListenStream="):
			p := strings.TrimPrefix(l, "ListenStream=")
			l = "ListenStream=" + path.Join(path.Dir(p), d.Name, path.Base(p))
		}
		b.WriteString(l + "\n")
		if l == "[Service]" && block != "" {
			b.WriteString(block)
			added = true
		}
	}
	if block != "" && !added {
		return "", errors.New("the shipped executor service has no [Service] section")
	}
	return b.String(), nil
}

// execPath is the executor binary the shipped service starts: it is bound
// into the root at the same place.
func execPath(service string) (string, error) {
	for _, l := range strings.Split(service, "\n") {
		v, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		f := strings.Fields(strings.TrimLeft(v, "-@:+!"))
		if len(f) > 0 && path.IsAbs(f[0]) {
			return f[0], nil
		}
	}
	return "", errors.New("the shipped executor service has no ExecStart= with an absolute path")
}
