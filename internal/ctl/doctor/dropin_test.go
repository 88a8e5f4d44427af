package doctor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/config"
)

// The config check reads config.yaml with its drop-ins, names each one it
// read, and fails naming the drop-in that does not parse.
func TestDoctorConfigDropIns(t *testing.T) {
	d, _ := fixture(t)
	dir := config.DropInDir(d.configPath)
	mkdir(t, dir, 0o755)
	write(t, filepath.Join(dir, "50-site.yaml"), 0o644, "execution:\n  allowed_groups: [agorusers, staff]\n")
	write(t, filepath.Join(dir, "README"), 0o644, "not read\n")
	_, out := runDoctor(t, d, false)
	line, _ := findLine(out+"\n", "config")
	if !strings.Contains(line, "with "+filepath.Join(dir, "50-site.yaml")+":") || !strings.Contains(line, "groups [agorusers staff]") {
		t.Fatalf("config line %q: want the drop-in named and its groups merged in:\n%s", line, out)
	}
	if strings.Contains(line, "README") {
		t.Fatalf("config line %q names a file that is not a drop-in", line)
	}
	write(t, filepath.Join(dir, "60-bad.yaml"), 0o644, "execution:\n  alowed_users: [bob]\n")
	code, out := runDoctor(t, d, false)
	line, fix := findLine(out, "config")
	if code != 1 || !strings.HasPrefix(line, "FAIL") || !strings.Contains(line, "60-bad.yaml") || !strings.Contains(line, "alowed_users") ||
		!strings.Contains(fix, "drop-ins") {
		t.Fatalf("exit %d, config %q, fix %q: want a FAIL naming 60-bad.yaml and its key:\n%s", code, line, fix, out)
	}
}
