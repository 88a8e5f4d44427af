package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// confDir writes config.yaml (when main is not "-") and each drop-in
// (name, contents pairs) under a new directory; it returns config.yaml's path.
func confDir(t *testing.T, main string, drops ...string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if main != "-" {
		write(t, path, main)
	}
	if len(drops) > 0 {
		if err := os.Mkdir(DropInDir(path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(drops); i += 2 {
		write(t, filepath.Join(DropInDir(path), drops[i]), drops[i+1])
	}
	return path
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, path string) Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Later drop-ins (by name, not by the order they were written) win over
// earlier ones and over config.yaml; keys none of them names stay.
func TestDropInsMergeInOrder(t *testing.T) {
	path := confDir(t, "execution:\n  max_executors: 7\n  idle_timeout_ms: 1500\n",
		"20-b.yaml", "execution:\n  max_executors: 9\n",
		"10-a.yaml", "execution:\n  max_executors: 8\n  min_uid: 2000\n")
	c := mustLoad(t, path)
	want := Default()
	want.Execution.MaxExecutors = 9
	want.Execution.IdleTimeoutMS = 1500
	want.Execution.MinUID = 2000
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// A list in a drop-in replaces the one before it whole; a nested mapping
// is merged key by key, down to a map's entries and their fields.
func TestDropInListReplacedMappingMerged(t *testing.T) {
	path := confDir(t, `execution:
  allowed_groups: [staff, agents]
gateway:
  upstreams: {anthropic: "http://127.0.0.1:1"}
  prices: {claude-standin: {input: 1, output: 2}}
`, "50-x.yaml", `execution:
  allowed_groups: [agorusers]
gateway:
  upstreams: {openai: "http://127.0.0.1:2"}
  prices: {claude-standin: {output: 5}}
`)
	c := mustLoad(t, path)
	if diff := cmp.Diff([]string{"agorusers"}, c.Execution.AllowedGroups); diff != "" {
		t.Errorf("allowed_groups (-want +got):\n%s", diff)
	}
	up := c.Gateway.Upstreams
	if up["anthropic"] != "http://127.0.0.1:1" || up["openai"] != "http://127.0.0.1:2" || up["gemini"] != DefaultGateway().Upstreams["gemini"] {
		t.Errorf("upstreams not merged key by key: %v", up)
	}
	if p := c.Gateway.Prices["claude-standin"]; p.Input != 1 || p.Output != 5 {
		t.Errorf("claude-standin's price not merged field by field: %+v", p)
	}
}

// Each file is checked on its own: an unknown key in a drop-in is an
// error naming that file and the key's line; so is one that does not parse.
func TestDropInErrorsNameTheFile(t *testing.T) {
	for name, bad := range map[string]string{
		"unknown key": "execution:\n  max_executors: 3\n  max_executor: 4\n",
		"no yaml":     "execution: [\n",
		"wrong type":  "execution:\n  max_executors: many\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := confDir(t, "", "10-good.yaml", "execution: {min_uid: 1500}\n", "30-bad.yaml", bad)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(DropInDir(path), "30-bad.yaml")) {
				t.Fatalf("err = %v, want one naming 30-bad.yaml", err)
			}
			if name == "unknown key" && !strings.Contains(err.Error(), "line 3: unknown key max_executor") {
				t.Fatalf("err = %v, want its line and key", err)
			}
			t.Log(err)
		})
	}
}

// The merged result is validated: values each fine alone but not together
// are refused, naming the drop-ins.
func TestDropInMergedValidated(t *testing.T) {
	path := confDir(t, "sandbox:\n  prompts: workspace\n", "50-x.yaml", "sandbox:\n  allowed: [\"off\"]\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "50-x.yaml") {
		t.Fatalf("err = %v, want the merged result refused naming 50-x.yaml", err)
	}
}

// Only *.yaml files count: others (a package manager's leftovers, an
// editor's backup, a hidden file, a directory) are not read.
func TestDropInOnlyYAML(t *testing.T) {
	path := confDir(t, "execution:\n  max_executors: 7\n",
		"50-x.yaml.dpkg-old", "nonsense: [\n", "50-x.yaml~", "nonsense: 1\n",
		".50-x.yaml", "nonsense: 1\n", "README", "nonsense: 1\n")
	if err := os.Mkdir(filepath.Join(DropInDir(path), "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := mustLoad(t, path).Execution.MaxExecutors; got != 7 {
		t.Fatalf("max_executors = %d, want 7", got)
	}
	if d, err := DropIns(path); err != nil || len(d) != 0 {
		t.Fatalf("DropIns = %v, %v; want none", d, err)
	}
}

// A drop-in that cannot be read is an error, not a drop-in skipped.
func TestDropInUnreadable(t *testing.T) {
	path := confDir(t, "", "10-a.yaml", "execution: {min_uid: 1500}\n")
	if err := os.Symlink(t.TempDir(), filepath.Join(DropInDir(path), "20-dir.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "20-dir.yaml") {
		t.Fatalf("err = %v, want one naming 20-dir.yaml", err)
	}
	if os.Geteuid() == 0 {
		return // root reads a mode 000 file
	}
	path = confDir(t, "", "10-a.yaml", "execution: {min_uid: 1500}\n")
	if err := os.Chmod(filepath.Join(DropInDir(path), "10-a.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "10-a.yaml") {
		t.Fatalf("err = %v, want one naming 10-a.yaml", err)
	}
}

// Upgrades lose nothing: with no config.d the file reads as it did, a
// missing file still means the defaults, and drop-ins apply without it.
func TestNoDropInDirAsBefore(t *testing.T) {
	main := "execution:\n  max_executors: 7\nsandbox:\n  prompts: workspace\n"
	alone, err := Parse(strings.NewReader(main))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(alone, mustLoad(t, confDir(t, main))); diff != "" {
		t.Fatalf("no config.d (-file alone +loaded):\n%s", diff)
	}
	if diff := cmp.Diff(Default(), mustLoad(t, confDir(t, "-"))); diff != "" {
		t.Fatalf("nothing at all (-default +loaded):\n%s", diff)
	}
	if got := mustLoad(t, confDir(t, "-", "10-a.yaml", "execution: {min_uid: 1500}\n")).Execution.MinUID; got != 1500 {
		t.Fatalf("a drop-in without config.yaml: min_uid %d, want 1500", got)
	}
}

// An empty drop-in, or one naming a section with nothing in it, changes nothing.
func TestDropInEmpty(t *testing.T) {
	main := "gateway:\n  enabled: true\n"
	path := confDir(t, main, "10-empty.yaml", "", "20-bare.yaml", "gateway:\n")
	if !mustLoad(t, path).Gateway.Enabled {
		t.Fatal("an empty gateway: in a drop-in turned the gateway off")
	}
}

// Stamp changes when a drop-in is added, changed or removed.
func TestStampSeesDropIns(t *testing.T) {
	path := confDir(t, "execution: {}\n", "10-a.yaml", "execution: {min_uid: 1500}\n")
	s0 := Stamp(path)
	b := filepath.Join(DropInDir(path), "20-b.yaml")
	write(t, b, "execution: {min_uid: 1600}\n")
	s1 := Stamp(path)
	write(t, b, "execution: {min_uid: 16000}\n")
	s2 := Stamp(path)
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if s1 == s0 || s2 == s1 || Stamp(path) != s0 {
		t.Fatalf("stamps: %q %q %q %q", s0, s1, s2, Stamp(path))
	}
}
