package doctor

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/envdef"
)

// TestEnvironments: an environment whose root lacks the dynamic
// executor's interpreter, or whose units are missing, fails; with both
// in place it passes; a default that names nothing defined fails.
func TestEnvironments(t *testing.T) {
	d, _ := fixture(t)
	interp := interpreterOf(t, "/bin/true")
	if interp == "" {
		t.Skip("/bin/true is static here")
	}
	bin, _ := os.ReadFile("/bin/true")
	mkdir(t, filepath.Join(d.root, filepath.Dir(executorBinary)), 0o755)
	write(t, filepath.Join(d.root, executorBinary), 0o755, string(bin))
	mkdir(t, filepath.Join(d.root, "/srv/py"), 0o755)
	mkdir(t, filepath.Join(d.root, "/etc/systemd/system"), 0o755)
	if err := envdef.Save(filepath.Join(d.root, envdef.DefaultDir), envdef.Definition{Name: "py", Root: "/srv/py", Agents: envdef.AgentsHost}); err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		f := checkConfig(context.Background(), d)
		if f.Status == "fail" {
			t.Fatalf("config: %+v", f)
		}
		f = checkEnvironments(context.Background(), d)
		if got := f.Status + " " + f.Detail; !strings.Contains(got, want) {
			t.Errorf("environments: %q, want %q in it", got, want)
		}
	}
	check("unit agor-env-py@.socket is missing")
	for _, u := range []string{"agor-env-py@.socket", "agor-env-py@.service"} {
		write(t, filepath.Join(d.root, "/etc/systemd/system", u), 0o644, "[Unit]\n")
	}
	check("has no " + interp)
	mkdir(t, filepath.Join(d.root, "/srv/py", filepath.Dir(interp)), 0o755)
	write(t, filepath.Join(d.root, "/srv/py", interp), 0o755, "")
	check("ok py: root, units and executor in place")
	write(t, filepath.Join(d.root, "/etc/agor/config.yaml"), 0o644, "environments:\n  default: gone\n")
	check("environments.default is gone")
}

func interpreterOf(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			buf := make([]byte, p.Filesz)
			_, _ = p.ReadAt(buf, 0)
			return strings.TrimRight(string(buf), "\x00")
		}
	}
	return ""
}
