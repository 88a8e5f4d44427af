package envdef

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"py313": true, "a": true, "deb-13": true, "0x": true,
		"": false, "-a": false, "Py": false, "a_b": false, "a.b": false, "a/b": false, "a:b": false,
		"a@b": false, "host": false, "hosts": true, strings.Repeat("a", 33): false, strings.Repeat("a", 32): true,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", name, err, ok)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	good := Definition{Name: "py", Root: "/srv/py", Agents: AgentsHost}
	for _, tc := range []struct {
		name string
		edit func(*Definition)
	}{
		{"both roots", func(d *Definition) { d.Image = "/srv/py.raw" }},
		{"no root", func(d *Definition) { d.Root = "" }},
		{"relative root", func(d *Definition) { d.Root = "srv/py" }},
		{"root /", func(d *Definition) { d.Root = "/" }},
		{"unclean bind", func(d *Definition) { d.Bind = []string{"/srv/../etc"} }},
		{"bind with colon", func(d *Definition) { d.Bind = []string{"/srv:/etc"} }},
		{"bind with specifier", func(d *Definition) { d.BindReadOnly = []string{"/srv/%h"} }},
		{"agents", func(d *Definition) { d.Agents = "" }},
		{"name", func(d *Definition) { d.Name = "Py" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good
			tc.edit(&d)
			if err := d.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil, want an error", d)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(good) = %v", err)
	}
}

func TestSaveLoadList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := Definition{Name: "py", Root: "/srv/py", Agents: AgentsImage, Users: []string{"alice"}, Groups: []string{"dev"}, Bind: []string{"/srv/work"}}
	if err := Save(dir, d); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, "py")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("Load after Save (-want +got):\n%s", diff)
	}
	all, err := List(dir)
	if err != nil || len(all) != 1 {
		t.Errorf("List = %v, %v; want one", all, err)
	}
	if _, err := Load(dir, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(nope) = %v, want ErrNotFound", err)
	}
	if _, err := Load(dir, "../py"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Load(../py) = %v, want ErrInvalidName", err)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"unknown key":  "name: py\nroot: /srv/py\nagents: host\nrootfs: /x\n",
		"another name": "name: other\nroot: /srv/py\nagents: host\n",
	} {
		if _, err := parse(strings.NewReader(text), "py"); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: parse = %v, want ErrInvalid", name, err)
		}
	}
}

func TestPermits(t *testing.T) {
	t.Parallel()
	d := Definition{Users: []string{"alice"}, Groups: []string{"dev"}}
	inDev := func(g ...string) (bool, error) { return len(g) == 1 && g[0] == "dev", nil }
	notIn := func(...string) (bool, error) { return false, nil }
	for _, tc := range []struct {
		user    string
		inGroup func(...string) (bool, error)
		want    bool
	}{{"alice", notIn, true}, {"bob", notIn, false}, {"bob", inDev, true}} {
		if got, _ := d.Permits(tc.user, tc.inGroup); got != tc.want {
			t.Errorf("Permits(%s) = %v, want %v", tc.user, got, tc.want)
		}
	}
	called := false
	empty := Definition{}
	if ok, _ := empty.Permits("bob", func(...string) (bool, error) { called = true; return true, nil }); ok || called {
		t.Errorf("an empty definition permits bob (%v) or asked his groups (%v)", ok, called)
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	for _, tc := range [][2]string{{"alice", ""}, {"alice", "py"}, {"jane.doe@corp", "deb-13"}} {
		a, e := SplitKey(Key(tc[0], tc[1]))
		if a != tc[0] || e != tc[1] {
			t.Errorf("SplitKey(Key(%q, %q)) = %q, %q", tc[0], tc[1], a, e)
		}
	}
	if Key("alice", "") != "alice" {
		t.Error("the host's key is not the account")
	}
}
