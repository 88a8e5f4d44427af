package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
	ports := listening(t, l.Pid())
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

// listening is the TCP ports pid listens on (IPv4).
func listening(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
			continue
		}
		_, hexPort, _ := strings.Cut(f[1], ":")
		if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports
}
