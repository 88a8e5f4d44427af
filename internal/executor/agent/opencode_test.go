package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
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
