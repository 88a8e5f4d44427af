package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agor-sh/agor/internal/identity"
)

// A directory account (LDAP through nslcd or SSSD, systemd-userdbd's
// records) is not in /etc/passwd: outside the sandbox, glibc's NSS
// modules ask a daemon for it over a Unix socket (/run/nslcd/socket,
// /run/systemd/userdb/*, nscd's). A confined process may open no Unix
// socket (seccomp.go), so there id -un printed her uid, ls -l numbers,
// git its "unknown" ident. The view does not open those sockets to it:
// each is a door to more than a lookup. nslcd's protocol also carries
// PAM's requests (authenticate any directory account, change its
// password): a confined agent would get an unthrottled password-guessing
// oracle for every account, no PAM delay or lockout in between.
// systemd-userdbd's directory holds other services' varlink sockets
// beside the lookups (systemd-homed's among them), and nscd answers for
// whatever its cache holds. Instead the view's /etc/passwd and /etc/group
// are the host's with her own entry and her primary group's added, as the
// executor resolved them (Names): the only accounts the view can show
// anyway, since her user namespace maps her uid and her group alone
// (every other owner is the overflow uid, nobody, which the host's files
// name). The files are bound read-only, and the temporary file they were
// written to is unlinked before the command starts, so nothing in the view
// can change them. No socket is opened and nothing is asked at a lookup:
// the task learns its own entry, which any local user can read with
// getent. Without a view (Landlock and the filter alone) a directory
// account's names stay numbers.

// Names are the person's own passwd and group lines, as the user
// database has them, for the view's /etc/passwd and /etc/group.
type Names struct {
	Passwd string // name:x:uid:gid::home:shell
	Group  string // name:x:gid:
}

// NamesOf are u's lines, with group the name of its primary group ("":
// none). A field that would break a line (a colon, a newline) leaves
// that line out.
func NamesOf(u identity.User, group string) Names {
	var n Names
	if okFields(u.Name, u.Home, u.Shell) {
		n.Passwd = fmt.Sprintf("%s:x:%d:%d::%s:%s", u.Name, u.UID, u.GID, u.Home, u.Shell)
	}
	if group != "" && okFields(group) {
		n.Group = fmt.Sprintf("%s:x:%d:", group, u.GID)
	}
	return n
}

func okFields(fields ...string) bool {
	for _, f := range fields {
		if strings.ContainsAny(f, ":\n\x00") {
			return false
		}
	}
	return fields[0] != ""
}

// withEntry is host (a passwd or group file) with line added, or nil when
// there is nothing to add: host has an entry with line's number (its
// third field) already, or line is not a well-formed entry.
func withEntry(host []byte, line string) []byte {
	f := strings.Split(line, ":")
	if len(f) < 4 || f[0] == "" || strings.ContainsAny(line, "\n\x00") {
		return nil
	}
	if _, err := strconv.ParseUint(f[2], 10, 32); err != nil {
		return nil
	}
	for _, l := range bytes.Split(host, []byte("\n")) {
		if h := strings.Split(string(l), ":"); len(h) > 2 && h[2] == f[2] {
			return nil
		}
	}
	out := append([]byte(nil), host...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(append(out, line...), '\n')
}

// nssFile pairs a host file with the line the view adds to it.
type nssFile struct{ path, line string }

func (n Names) files() []nssFile {
	return []nssFile{{"/etc/passwd", n.Passwd}, {"/etc/group", n.Group}}
}

// addNames clones, read-only onto /etc/passwd and /etc/group, the host's
// file with n's line added where it lacks the entry, written in dir (the
// private temp directory). It returns the files written, which the caller
// removes once the clones are attached.
func (c *clones) addNames(n Names, dir string) ([]string, error) {
	var made []string
	if dir == "" {
		return nil, nil
	}
	for _, f := range n.files() {
		if f.line == "" {
			continue
		}
		fi, err := os.Lstat(f.path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		host, err := os.ReadFile(f.path)
		if err != nil {
			return made, fmt.Errorf("read %s: %w", f.path, err)
		}
		content := withEntry(host, f.line)
		if content == nil {
			continue
		}
		p, err := writeNames(dir, content)
		if p != "" {
			made = append(made, p)
		}
		if err == nil {
			err = c.add(p, f.path, true)
		}
		if err != nil {
			return made, fmt.Errorf("own entry in %s: %w", f.path, err)
		}
	}
	return made, nil
}

// writeNames writes content to a new file in dir, readable as the host's
// /etc/passwd is.
func writeNames(dir string, content []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".agor-names-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

func removeAll(paths []string) {
	for _, p := range paths {
		_ = os.Remove(p)
	}
}
