package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/google/go-cmp/cmp"
)

func TestWithEntry(t *testing.T) {
	t.Parallel()
	host := "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n"
	ada := "ada.lovelace:x:20001:20000::/home/ada.lovelace:/bin/bash"
	for _, tc := range []struct {
		name, host, line, want string
	}{
		{"added", host, ada, host + ada + "\n"},
		{"no final newline", strings.TrimSuffix(host, "\n"), ada, host + ada + "\n"},
		{"host has the uid", host, "alice2:x:1000:1000::/home/a:/bin/sh", ""},
		{"no number", host, "ada:x:ada:1::/:/bin/sh", ""},
		{"too short", host, "ada:x", ""},
		{"two lines", host, ada + "\nroot2:x:0:0::/:/bin/sh", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, string(withEntry([]byte(tc.host), tc.line))); d != "" {
				t.Errorf("withEntry (-want +got):\n%s", d)
			}
		})
	}
}

func TestNamesOf(t *testing.T) {
	t.Parallel()
	u := identity.User{Name: "ada.lovelace", UID: 20001, GID: 20000, Home: "/home/ada.lovelace", Shell: "/bin/bash"}
	want := Names{Passwd: "ada.lovelace:x:20001:20000::/home/ada.lovelace:/bin/bash", Group: "ldapagents:x:20000:"}
	if d := cmp.Diff(want, NamesOf(u, "ldapagents")); d != "" {
		t.Errorf("NamesOf (-want +got):\n%s", d)
	}
	u.Home = "/home/a:b"
	if got := NamesOf(u, "bad\ngroup"); got != (Names{}) {
		t.Errorf("NamesOf with broken fields = %+v, want none", got)
	}
}

// TestCommandNames: the entries reach the launcher, and only with a view.
func TestCommandNames(t *testing.T) {
	t.Parallel()
	n := Names{Passwd: "ada:x:20001:20000::/home/ada:/bin/sh", Group: "ldapagents:x:20000:"}
	s := Spec{Level: Workspace, Cwd: "/w", Namespaces: true, Names: n, self: "/x"}
	l, err := parse(s.Command([]string{"id"})[2:])
	if err != nil || l.names != n {
		t.Fatalf("parse(Command) = %+v, %v; want names %+v", l.names, err, n)
	}
	s.Namespaces = false
	if argv := s.Command([]string{"id"}); slices.Contains(argv, "--passwd") {
		t.Errorf("without a view, Command passes the entries: %q", argv)
	}
}

// TestViewNames: a directory account's entries (an uid the host's files
// lack) resolve in the view, without a socket; the files stay read-only
// and the host's as they were, and nothing is left in the temp directory.
func TestViewNames(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	spec := r.spec()
	spec.Names = Names{Passwd: "ada.lovelace:x:4242421:4242422::/home/ada.lovelace:/bin/sh", Group: "ldapagents:x:4242422:"}
	before := fileState(t, "/etc/passwd")
	out, err := run(t, spec, r.work, `getent passwd 4242421; getent group 4242422; getent passwd root | cut -d: -f1
		echo x >> /etc/passwd && echo wrote-passwd; ls -A /tmp`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, w := range []string{spec.Names.Passwd, spec.Names.Group, "root\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("the view did not resolve %q: %s", w, out)
		}
	}
	if strings.Contains(out, "wrote-passwd") || strings.Contains(out, ".agor-names") {
		t.Errorf("the view's /etc/passwd was writable, or its file left in /tmp: %s", out)
	}
	if fileState(t, "/etc/passwd") != before {
		t.Error("the host's /etc/passwd changed")
	}
	if left, _ := filepath.Glob(filepath.Join(r.tmp, ".agor-names-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(r.tmp); err != nil {
		t.Fatal(err)
	}
}
