package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpencodeSetup: opencode is pointed at its configuration and at an
// empty models.dev catalog in the agent's HOME (so it does not build the
// one bundled in its binary, at start and again on a pre-warmed agent's
// first prompt), and neither file holds the key.
func TestOpencodeSetup(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	req := Request{Model: "gpt-x/mini", Env: []string{"HOME=" + home, "OPENAI_API_KEY=sk-secret-1"}}
	args, err := opencodeSetup(&req)
	if err != nil || len(args) != 1 || args[0] != "acp" {
		t.Fatalf("opencodeSetup: %q %v", args, err)
	}
	under := func(name string) string {
		t.Helper()
		p := Getenv(req.Env, name)
		if !strings.HasPrefix(p, filepath.Join(home, ".config", "agor", "opencode")+"/") {
			t.Fatalf("%s = %q: want a file of agor's in HOME", name, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "sk-secret-1") {
			t.Errorf("%s holds the key: %s", name, b)
		}
		return string(b)
	}
	var catalog map[string]json.RawMessage
	if b := under("OPENCODE_MODELS_PATH"); json.Unmarshal([]byte(b), &catalog) != nil || catalog == nil || len(catalog) != 0 {
		t.Errorf("models.dev catalog %q: want an empty JSON object", b)
	}
	var cfg struct {
		Model            string   `json:"model"`
		EnabledProviders []string `json:"enabled_providers"`
	}
	if b := under("OPENCODE_CONFIG"); json.Unmarshal([]byte(b), &cfg) != nil || cfg.Model != "agor/gpt-x/mini" ||
		len(cfg.EnabledProviders) != 1 || cfg.EnabledProviders[0] != "agor" {
		t.Errorf("config %s: want model agor/gpt-x/mini, only the agor provider", b)
	}
}

// TestOpencodeServerLocked: the HTTP server `opencode acp` runs on
// 127.0.0.1 for its own ACP side refuses a client without its password
// (another local account), while the agent still takes its turn.
func TestOpencodeServerLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real opencode CLI; not in -short")
	}
	t.Parallel()
	c := acpCases(t)[1]
	req, _ := c.request(t, "Say hello.")
	l, err := c.adapter.(Preparer).Prepare(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-Ready(l)
	ports := l.(*acpLive).p.ListenPorts()
	t.Logf("opencode listens on %v", ports)
	if len(ports) == 0 {
		t.Log("opencode serves no TCP port: nothing to lock")
	}
	for _, port := range ports {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/path", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("port %d answers a client without the password: %s", port, resp.Status)
		}
	}
	h := &acpHost{}
	if res, err := l.Turn(t.Context(), req, h); err != nil || res.Status != "completed" || h.text() != c.text {
		t.Fatalf("turn: %+v %v, text %q", res, err, h.text())
	}
}

// TestOpencodePrewarmBoots: a pre-warmed opencode has started its
// services for the cwd (its file watcher's watch on it is the sign) by
// the end of its handshake, before any prompt, instead of on its first
// session/prompt; and no model request was made for it.
func TestOpencodePrewarmBoots(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real opencode CLI; not in -short")
	}
	t.Parallel()
	c := acpCases(t)[1]
	req, model := c.request(t, "")
	l, err := c.adapter.(Preparer).Prepare(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	<-Ready(l)
	var st syscall.Stat_t
	if err := syscall.Stat(req.Cwd, &st); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // the watch may be set just after the handshake
	for !watches(l.Pid(), st.Ino) {
		if time.Now().After(deadline) {
			t.Fatal("no inotify watch on the cwd after the handshake: opencode's directory services wait for the first prompt")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b := model.bodies(); len(b) != 0 {
		t.Errorf("%d model requests before any prompt", len(b))
	}
}

// watches says pid holds an inotify watch on inode ino.
func watches(pid int, ino uint64) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", pid))
	want := fmt.Sprintf(" ino:%x ", ino)
	for _, fd := range fds {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "inotify ") && strings.Contains(line, want) {
				return true
			}
		}
	}
	return false
}

// TestOpencodeNoTitleRequest: a session's first prompt makes one model
// request, the conversation's (it offers tools); opencode asks for no
// title besides.
func TestOpencodeNoTitleRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real opencode CLI; not in -short")
	}
	t.Parallel()
	c := acpCases(t)[1]
	req, model := c.request(t, "Say hello.")
	h := &acpHost{}
	if res, err := c.run(t, t.Context(), req, h); err != nil || res.Status != "completed" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	bodies := model.bodies()
	for _, b := range bodies {
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal([]byte(b), &r) != nil || len(r.Tools) == 0 {
			t.Errorf("a model request without tools (a title request?): %.200s", b)
		}
	}
	if len(bodies) != 1 {
		t.Errorf("%d model requests for a plain turn, want 1", len(bodies))
	}
}
