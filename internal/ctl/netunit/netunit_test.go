package netunit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// TestApplyPlan: the default's drop-in on the template, a person whose
// mode differs gets one of their own, a person back at the default loses
// theirs; only what changed is reported, and a second run changes nothing.
func TestApplyPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := config.DefaultNetwork()
	n.Default = config.NetworkSet{Mode: config.NetworkProxy}
	sets := map[string]config.NetworkSet{
		"alice":   {Mode: config.NetworkProxy, Allow: []string{"model.test"}},
		"bob":     {Mode: config.NetworkOpen},
		"carol":   {Mode: config.NetworkNone},
		"d.o-e_x": {Mode: config.NetworkOpen},
	}
	changed, err := Write(dir, MakePlan(n, sets))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"", "bob", "carol", "d.o-e_x"}; !slices.Equal(changed, want) {
		t.Errorf("changed %q, want %q", changed, want)
	}
	read := func(user string) string {
		b, _ := os.ReadFile(filepath.Join(Dir(dir, user), FileName))
		return string(b)
	}
	if s := read(""); !strings.Contains(s, "PrivateNetwork=yes") || !strings.Contains(s, "InaccessiblePaths=-/run/user\n") || !strings.Contains(s, "AGOR_EXECUTOR_EGRESS_SOCKET=/run/agor/egress.sock AGOR_EXECUTOR_EGRESS_PORT=3128") {
		t.Errorf("template:\n%s", s)
	}
	if read("alice") != "" {
		t.Error("alice has the default's mode, and a drop-in of her own")
	}
	if s := read("bob"); !strings.Contains(s, "PrivateNetwork=no") || !strings.Contains(s, "InaccessiblePaths=\n") || !strings.Contains(s, "AGOR_EXECUTOR_EGRESS_SOCKET=\n") {
		t.Errorf("bob:\n%s", s)
	}
	if s := read("carol"); !strings.Contains(s, "PrivateNetwork=yes") || !strings.Contains(s, "InaccessiblePaths=-/run/user\n") || !strings.Contains(s, "AGOR_EXECUTOR_EGRESS_SOCKET=\n") {
		t.Errorf("carol:\n%s", s)
	}
	have, _ := Existing(dir)
	if !slices.Equal(have, []string{"bob", "carol", "d.o-e_x"}) {
		t.Errorf("Existing = %q", have)
	}
	if changed, _ := Write(dir, MakePlan(n, sets)); len(changed) != 0 {
		t.Errorf("second run changed %q", changed)
	}
	sets["bob"] = config.NetworkSet{Mode: config.NetworkProxy}
	if changed, _ := Write(dir, MakePlan(n, sets)); !slices.Equal(changed, []string{"bob"}) {
		t.Errorf("bob back at the default: changed %q", changed)
	}
	if _, err := os.Stat(Dir(dir, "bob")); !os.IsNotExist(err) {
		t.Errorf("bob's empty drop-in directory stayed: %v", err)
	}
}

// TestMirror: an environment's units get the host executor's drop-ins,
// template and per person, and lose those the host's lost.
func TestMirror(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := config.DefaultNetwork()
	n.Default = config.NetworkSet{Mode: config.NetworkProxy}
	sets := map[string]config.NetworkSet{"alice": {Mode: config.NetworkProxy}, "bob": {Mode: config.NetworkOpen}}
	if _, err := Write(dir, MakePlan(n, sets)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agor-env-py@.service"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prefixes, _ := EnvPrefixes(dir)
	if !slices.Equal(prefixes, []string{"agor-env-py"}) {
		t.Fatalf("EnvPrefixes = %q", prefixes)
	}
	if changed, err := Mirror(dir, "agor-env-py"); err != nil || !changed {
		t.Fatalf("Mirror = %v, %v", changed, err)
	}
	read := func(prefix, user string) string {
		b, _ := os.ReadFile(filepath.Join(dirOf(dir, prefix, user), FileName))
		return string(b)
	}
	for _, u := range []string{"", "bob"} {
		if got, want := read("agor-env-py", u), read("agor-executor", u); got != want || want == "" {
			t.Errorf("%q: env drop-in %q, host's %q", u, got, want)
		}
	}
	sets["bob"] = config.NetworkSet{Mode: config.NetworkProxy}
	if _, err := Write(dir, MakePlan(n, sets)); err != nil {
		t.Fatal(err)
	}
	if changed, _ := Mirror(dir, "agor-env-py"); !changed || read("agor-env-py", "bob") != "" {
		t.Errorf("bob's env drop-in stayed after his host one went (changed %v)", changed)
	}
	if changed, _ := Mirror(dir, "agor-env-py"); changed {
		t.Error("a second Mirror changed something")
	}
}
