package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// TestAgentsFileReadAgain: an edit of agents.yaml reaches the next prompt
// of the same executor; a file that no longer parses fails the prompt
// naming it, and the fixed file is taken again.
func TestAgentsFileReadAgain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agents.yaml")
	writeAgents := func(body string) {
		t.Helper()
		// a rename, as editors and package managers replace files
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	writeAgents("fake:\n  env:\n    FAKE_MARK: one\n")
	file, err := OpenAgents(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemonSide{key: "k"}
	c, _, _ := setupService(t, d, func(s *Service) { s.AgentsFile = file })
	turn := func(id string) (string, protocol.ExecutePromptResult) {
		t.Helper()
		var res protocol.ExecutePromptResult
		if err := c.Call(context.Background(), protocol.MethodExecutePrompt, prompt(id, "hi"), &res); err != nil {
			t.Fatal(err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		var marks []string
		for _, m := range d.events {
			if text, _ := m.Event.Data["text"].(string); m.TaskID == id && strings.HasPrefix(text, "mark=") {
				marks = append(marks, text)
			}
		}
		return strings.Join(marks, ","), res
	}
	if got, _ := turn("t1"); got != "mark=one" {
		t.Fatalf("first prompt: %q", got)
	}
	writeAgents("fake:\n  env:\n    FAKE_MARK: two\n")
	if got, _ := turn("t2"); got != "mark=two" {
		t.Fatalf("after the edit: %q, want mark=two", got)
	}
	writeAgents("fake:\n  env: [not, a, map]\n")
	if _, res := turn("t3"); res.Status != "failed" || res.Error == nil || !strings.Contains(res.Error.Message, path) {
		t.Fatalf("a broken file: %+v %+v, want failed naming %s", res, res.Error, path)
	}
	writeAgents("fake:\n  env:\n    FAKE_MARK: three\n")
	if got, _ := turn("t4"); got != "mark=three" {
		t.Fatalf("after the fix: %q, want mark=three", got)
	}
}
