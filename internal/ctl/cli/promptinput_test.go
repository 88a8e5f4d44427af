package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// prewarmDaemon answers prompts with their text as status, and records
// each pre-warm's body (on prewarms) and each prompt's text, in order.
type prewarmDaemon struct {
	socket   string
	prewarms chan apiwire.PromptBody
	mu       sync.Mutex
	order    []string
}

func newPrewarmDaemon(t *testing.T) *prewarmDaemon {
	d := &prewarmDaemon{socket: filepath.Join(t.TempDir(), "d.sock"), prewarms: make(chan apiwire.PromptBody, 4)}
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/executors/alice/prewarm", func(w http.ResponseWriter, r *http.Request) {
		var b apiwire.PromptBody
		_ = json.NewDecoder(r.Body).Decode(&b)
		d.note("prewarm")
		d.prewarms <- b
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(apiwire.PrewarmAccepted{SessionID: "s9", Status: "started"})
	})
	m.HandleFunc("POST /v1/executors/alice/prompt", func(w http.ResponseWriter, r *http.Request) {
		var b apiwire.PromptBody
		_ = json.NewDecoder(r.Body).Decode(&b)
		d.note("prompt " + b.Prompt)
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]any{"task_id": "t1", "session_id": "s9"})
		_ = enc.Encode(map[string]any{"result": map[string]any{"status": "completed", "message_count": 1}})
	})
	srv := &http.Server{Handler: m}
	ln := listenUnix(t, d.socket)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return d
}

func (d *prewarmDaemon) note(s string) {
	d.mu.Lock()
	d.order = append(d.order, s)
	d.mu.Unlock()
}

func (d *prewarmDaemon) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}

// A prompt read from stdin: the pre-warm, with the prompt's options and
// no prompt, reaches the daemon before the prompt is written, and the
// prompt follows it.
func TestPromptStdinPrewarmsFirst(t *testing.T) {
	d := newPrewarmDaemon(t)
	pr, pw := io.Pipe()
	go func() {
		b := <-d.prewarms // only now is the prompt typed
		if b.Tool != "codex" || b.Cwd != "src" || b.PermissionMode != "plan" || b.Prompt != "" {
			t.Errorf("pre-warm body %+v", b)
		}
		_, _ = io.WriteString(pw, "explain\nthis repo\n")
		pw.Close()
	}()
	r := agorctl(context.Background(), pr, "prompt", "--api", d.socket, "--tool", "codex", "--cwd", "src", "--mode", "plan", "alice", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Join(d.seen(), "|"); got != "prewarm|prompt explain\nthis repo\n" {
		t.Fatalf("daemon saw %q", got)
	}
}

// --file reads the prompt from a file; --no-prewarm sends no pre-warm;
// a prompt on the command line has none either (it is there at once).
func TestPromptFileAndNoPrewarm(t *testing.T) {
	d := newPrewarmDaemon(t)
	file := filepath.Join(t.TempDir(), "p.txt")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--file", file, "--no-prewarm", "alice"}, {"alice", "on", "argv"}} {
		if r := agorctl(context.Background(), closedStdin{t}, append([]string{"prompt", "--api", d.socket}, args...)...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	if got := strings.Join(d.seen(), "|"); got != "prompt from a file|prompt on argv" {
		t.Fatalf("daemon saw %q", got)
	}
	if r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", d.socket, "--file", file, "alice", "more"); r.code != exitUsage {
		t.Fatalf("--file with words: exit %d", r.code)
	}
}
