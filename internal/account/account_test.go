package account

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"alice": true, "_svc": true, "bob-2": true, "a_b": true, "root": true,
		"john.smith": true, "Jane": true, "jsmith@corp.example": true, "ada.lovelace": true,
		"2bob": true, "-x": true, "ünï": true, "CORP\\jsmith": true, "a b": false,
		"": false, "1000": false, ".": false, "..": false, "a/b": false, "a:b": false,
		"x\n": false, "a\tb": false, " a": false, "a ": false, "a\u00a0b": false, "\xff": false, "a\x7f": false,
		strings.Repeat("a", 256): true, strings.Repeat("a", 257): false,
	} {
		err := ValidName(name)
		if (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidName(%q) error does not wrap ErrInvalidName", name)
		}
	}
}

func TestEscape(t *testing.T) {
	for name, want := range map[string]string{
		"alice":               "alice",
		"john.smith":          "john.smith",
		"mary-jane":           `mary\x2djane`,
		"jsmith@corp.example": `jsmith\x40corp.example`,
		".hidden":             `\x2ehidden`,
		"ünï":                 `\xc3\xbcn\xc3\xaf`,
		`CORP\jsmith`:         `CORP\x5cjsmith`,
		"a b":                 `a\x20b`,
	} {
		if got := Escape(name); got != want {
			t.Errorf("Escape(%q) = %q, want %q", name, got, want)
		}
		back, err := Unescape(want)
		if err != nil || back != name {
			t.Errorf("Unescape(%q) = %q, %v, want %q", want, back, err, name)
		}
	}
	for _, bad := range []string{`a-b`, `a\x2`, `a\x61`, `a\X2d`, `a\x2D`, `.a`, "a@b", `a\y00`} {
		if _, err := Unescape(bad); err == nil {
			t.Errorf("Unescape(%q) accepted", bad)
		}
	}
}

// TestEscapeMatchesSystemd compares with systemd-escape itself where the
// host has it.
func TestEscapeMatchesSystemd(t *testing.T) {
	bin, err := exec.LookPath("systemd-escape")
	if err != nil {
		t.Skip("systemd-escape not installed")
	}
	for _, name := range []string{"alice", "john.smith", "mary-jane", "jsmith@corp.example", ".x", "ünï", `a\b`, "a b", "x:y_z"} {
		out, err := exec.Command(bin, "--", name).Output()
		if err != nil {
			t.Fatalf("systemd-escape %q: %v", name, err)
		}
		if got, want := Escape(name), strings.TrimSuffix(string(out), "\n"); got != want {
			t.Errorf("Escape(%q) = %q, systemd-escape says %q", name, got, want)
		}
	}
}

func TestSocketPath(t *testing.T) {
	p, err := SocketPath("/run/agor/executors/{user}.sock", "jsmith@corp.example")
	if err != nil || p != `/run/agor/executors/jsmith\x40corp.example.sock` {
		t.Errorf("got %q, %v", p, err)
	}
	if _, err := SocketPath("/run/agor/executors/{user}.sock", strings.Repeat("é", 20)); err == nil {
		t.Error("an over-long socket path was accepted")
	}
}

func FuzzValidName(f *testing.F) {
	f.Add("alice")
	f.Add("../etc")
	f.Add("jsmith@corp.example")
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(name) != nil {
			return
		}
		if strings.ContainsAny(name, "/:\n\x00") || name == "." || name == ".." {
			t.Fatalf("accepted %q", name)
		}
		esc := Escape(name)
		if strings.ContainsAny(esc, "/-@ ") || strings.HasPrefix(esc, ".") {
			t.Fatalf("Escape(%q) = %q has a character a unit instance may not", name, esc)
		}
		if back, err := Unescape(esc); err != nil || back != name {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", name, back, err)
		}
	})
}
