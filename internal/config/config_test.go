package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultsWhenMissingOrEmpty(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), c); diff != "" {
		t.Fatalf("missing file (-default +got):\n%s", diff)
	}
	c, err = Parse(strings.NewReader(""))
	if err != nil || !cmp.Equal(Default(), c) {
		t.Fatalf("empty file = %+v, %v", c, err)
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestParseOverridesDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	yaml := `
execution:
  backend: direct
  max_executors: 7
  idle_timeout_ms: 1500
  socket_path_template: /run/x/{user}/exec.sock
  allowed_users: [alice, bob]
  allowed_groups: [agents]
  min_uid: 2000
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Execution.Backend = "direct"
	want.Execution.MaxExecutors = 7
	want.Execution.IdleTimeoutMS = 1500
	want.Execution.SocketPathTemplate = "/run/x/{user}/exec.sock"
	want.Execution.AllowedUsers = []string{"alice", "bob"}
	want.Execution.AllowedGroups = []string{"agents"}
	want.Execution.MinUID = 2000
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"execution:\n  max_executor: 3\n", "unknown key max_executor"},
		{"executions: {}\n", "unknown key executions"},
		{"execution:\n  backend: docker\n", `execution.backend: "docker" is not one of systemd, direct`},
		{"execution:\n  max_executors: 0\n", "execution.max_executors: must be positive"},
		{"execution:\n  idle_timeout_ms: -5\n", "execution.idle_timeout_ms: must be positive"},
		{"execution:\n  max_executors: many\n", "cannot unmarshal !!str `many`"},
		{"execution:\n  socket_path_template: run/{user}.sock\n", "execution.socket_path_template"},
		{"execution:\n  socket_path_template: /run/agor.sock\n", "must contain {user} exactly once"},
		{"execution:\n  run_as_unix_user: false\n", "execution.executor_unix_user: required"},
		{"execution:\n  run_as_unix_user: false\n  executor_unix_user: root\n", "must not be root"},
		{"execution:\n  allowed_users: [alice, ../etc]\n", "execution.allowed_users: invalid user name"},
		{"execution:\n  min_uid: 0\n", "execution.min_uid: must be positive"},
		{"sandbox:\n  prompts: jail\n", `sandbox.prompts: "jail" is not a level`},
		{"sandbox:\n  prompts: read-only\n  allowed: [off, workspace]\n", "sandbox.prompts: \"read-only\" is not in sandbox.allowed"},
		{"execution: [\n", "line"},
	} {
		_, err := Parse(strings.NewReader(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

func TestRefusesHugeFile(t *testing.T) {
	_, err := Parse(strings.NewReader("#" + strings.Repeat("x", MaxFileSize+10)))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("huge file: %v", err)
	}
}

// FuzzParse: no input crashes or hangs the parser, and whatever it
// accepts is valid.
func FuzzParse(f *testing.F) {
	f.Add("execution:\n  backend: direct\n  allowed_users: [a]\n")
	f.Add("execution: &a {max_executors: *a}\n")
	f.Add("a: [[[[[[[[[[]]]]]]]]]]")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Parse(strings.NewReader(in))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("accepted an invalid config: %v", verr)
			}
		}
	})
}

// TestPackagedConfig: the configuration the packages ship parses, and is
// secure by default: agents' prompts are confined to their workspace, and
// keys stay in the daemon (the model gateway).
func TestPackagedConfig(t *testing.T) {
	c, err := Load("../../packaging/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Prompts != "workspace" || c.Sandbox.Default != "off" || !c.Sandbox.Required {
		t.Errorf("packaged sandbox: prompts %q, default %q, required %v; want workspace, off, true", c.Sandbox.Prompts, c.Sandbox.Default, c.Sandbox.Required)
	}
	if !c.Gateway.Enabled || Default().Gateway.Enabled {
		t.Errorf("gateway.enabled: packaged %v, without the key %v; want true, false", c.Gateway.Enabled, Default().Gateway.Enabled)
	}
}
