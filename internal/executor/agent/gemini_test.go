package agent

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The session's records move aside, gemini's name and the earlier
// set-aside one alike, to names that end in no short id (gemini's session
// cleanup deletes every file ending in the short id of a record without a
// conversation), and nothing is replaced.
func TestGeminiSetAsideSession(t *testing.T) {
	tmp := t.TempDir()
	chats := filepath.Join(tmp, "work", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"session-2026-11-23T09-42-9e1a3c57.jsonl":    "session",
		"session-2026-11-23T09-42-9e1a3c57-r1.jsonl": "moved earlier",
		"session-2026-11-23T09-44-r1-9e1a3c57.jsonl": "moved by an older agor",
		"session-2026-11-23T09-43-9e1a3c57.json":     "legacy, never reset",
		"session-2026-11-23T09-42-ba4cbebf.jsonl":    "another session",
		"notes-2026-11-23T09-42-9e1a3c57.jsonl":      "not a session",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(chats, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := geminiSetAsideSession(tmp, "9e1a3c57-5681-49e2-87d3-b568db1a5bf6"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"notes-2026-11-23T09-42-9e1a3c57.jsonl":      "not a session",
		"session-2026-11-23T09-42-ba4cbebf.jsonl":    "another session",
		"session-2026-11-23T09-42-9e1a3c57-r1.jsonl": "moved earlier",
		"session-2026-11-23T09-42-9e1a3c57-r2.jsonl": "session",
		"session-2026-11-23T09-44-9e1a3c57-r1.jsonl": "moved by an older agor",
		"session-2026-11-23T09-43-9e1a3c57.json":     "legacy, never reset",
	}
	checkDir(t, chats, want)
	// Ids gemini never makes, or with path characters, touch nothing.
	for _, id := range []string{"", "short", "../../x/yz"} {
		if err := geminiSetAsideSession(tmp, id); err != nil {
			t.Errorf("id %q: %v", id, err)
		}
	}
	checkDir(t, chats, want)
}

// checkDir wants exactly the files of want, with their contents, in dir.
func checkDir(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	names := slices.Sorted(maps.Keys(want))
	if !slices.Equal(got, names) {
		t.Fatalf("files %q, want %q", got, names)
	}
	for name, body := range want {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != body {
			t.Errorf("%s holds %q, want %q", name, b, body)
		}
	}
}

// TestGeminiRecordedOutput: a shell call's output is read back from the
// session record, unwrapped; another call's or a broken line is not taken.
func TestGeminiRecordedOutput(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "work", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	lines := `{"type":"user","content":[{"text":"run it"}]}
not json "call_1"
{"type":"gemini","toolCalls":[{"id":"call_0","result":[{"functionResponse":{"response":{"output":"other"}}}]}]}
{"type":"gemini","toolCalls":[{"id":"call_1","result":[{"functionResponse":{"id":"call_1","response":{"output":"<untrusted_context>\nOutput: printed\nProcess Group PGID: 7\n</untrusted_context>"}}}]}]}
`
	if err := os.WriteFile(filepath.Join(chats, "session-2026-11-25T10-00-4186670a.jsonl"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := geminiToolOutput(t.Context(), []string{"HOME=" + home}, "4186670a-dd2b", "call_1"); got != "Output: printed\nProcess Group PGID: 7" {
		t.Errorf("call_1: %q", got)
	}
	if got := geminiToolOutput(t.Context(), []string{"HOME=" + home}, "ffffffff-0000", "call_1"); got != "" {
		t.Errorf("another session's record was read: %q", got)
	}
	// A resumed session's record, set aside.
	aside := filepath.Join(chats, "session-2026-11-25T10-00-4186670a-r1.jsonl")
	if err := os.Rename(filepath.Join(chats, "session-2026-11-25T10-00-4186670a.jsonl"), aside); err != nil {
		t.Fatal(err)
	}
	if got := geminiToolOutput(t.Context(), []string{"HOME=" + home}, "4186670a-dd2b", "call_1"); got != "Output: printed\nProcess Group PGID: 7" {
		t.Errorf("call_1 in the record set aside: %q", got)
	}
}
