package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
)

// Defaults of the opencode adapter.
const (
	OpencodeDefaultModel   = "gpt-4.1-mini"
	OpencodeDefaultBaseURL = "https://api.openai.com/v1"
	// OpencodeBaseURLEnv names the variable in req.Env with the
	// OpenAI-compatible endpoint (…/v1) opencode is to call.
	OpencodeBaseURLEnv = "AGOR_OPENCODE_BASE_URL"
	// opencodeCatalog is the empty models.dev catalog's file name, beside
	// the configuration.
	opencodeCatalog = "models-dev.json"
)

func init() { Register("opencode", NewOpencode()) }

// NewOpencode is the adapter for opencode, driven over ACP (`opencode
// acp`). It writes $HOME/.config/agor/opencode/MODEL.json and points
// OPENCODE_CONFIG at it: one provider, "agor", using the bundled
// @ai-sdk/openai-compatible with baseURL from AGOR_OPENCODE_BASE_URL
// (default the OpenAI API) and the key from OPENAI_API_KEY, both read by
// opencode from its environment ({env:...}), so the file holds no secret;
// the model with tool_call; bash, edit and webfetch set to "ask" so every
// such call reaches the ACP client's permission handling; autoupdate off,
// sharing disabled; its "title" agent disabled, so a session's first
// prompt sends no second model request to name the session (a title agor
// never shows, paid for by the person, and raced against the prompt's
// own request).
//
// The models.dev catalog opencode would otherwise build from the copy
// bundled in its binary (every provider and model it knows; fetching a
// newer one is off) is replaced by an empty one (OPENCODE_MODELS_PATH):
// the "agor" provider is wholly defined in the configuration, and
// enabled_providers drops every other one, so the catalog only cost time:
// opencode 1.18 builds it once when the process starts and again on the
// first session/prompt (its per-directory services start there, not at
// session/new), about half the CPU of a pre-warmed agent's first turn.
// The model requests are the same either way.
//
// Resume uses session/resume (opencode offers it; no history replay).
func NewOpencode() *ACP {
	return &ACP{Key: "OPENAI_API_KEY", Install: "npm install -g opencode-ai", Setup: opencodeSetup, Boot: opencodeBoot, UI: opencodeScreen}
}

func opencodeSetup(req *Request) ([]string, error) {
	home, err := acpHome(req)
	if err != nil {
		return nil, err
	}
	model := req.Model
	if model == "" {
		model = OpencodeDefaultModel
	}
	if Getenv(req.Env, OpencodeBaseURLEnv) == "" {
		req.Env = acpSetenv(req.Env, OpencodeBaseURLEnv, OpencodeDefaultBaseURL)
	}
	data, err := json.MarshalIndent(opencodeConfig(model), "", "  ")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(home, ".config", "agor", "opencode")
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(model) + ".json"
	path := filepath.Join(dir, name)
	if err := acpWriteFile(path, data); err != nil {
		return nil, err
	}
	catalog := filepath.Join(dir, opencodeCatalog)
	if err := acpWriteFile(catalog, []byte("{}\n")); err != nil {
		return nil, err
	}
	if req.Env, err = opencodeLockServer(req.Env); err != nil {
		return nil, err
	}
	for _, kv := range [][2]string{
		{"OPENCODE_CONFIG", path},
		{"OPENCODE_MODELS_PATH", catalog},
		{"OPENCODE_DISABLE_MODELS_FETCH", "true"},
		{"OPENCODE_DISABLE_AUTOUPDATE", "true"},
		{"OPENCODE_DISABLE_SHARE", "true"},
	} {
		req.Env = acpSetenv(req.Env, kv[0], kv[1])
	}
	return []string{"acp"}, nil
}

func opencodeConfig(model string) map[string]any {
	return map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"autoupdate":        false,
		"share":             "disabled",
		"model":             "agor/" + model,
		"small_model":       "agor/" + model,
		"enabled_providers": []string{"agor"},
		"permission":        map[string]string{"bash": "ask", "edit": "ask", "webfetch": "ask"},
		"agent":             map[string]any{"title": map[string]bool{"disable": true}},
		"provider": map[string]any{"agor": map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "agor",
			"options": map[string]any{
				"baseURL": "{env:" + OpencodeBaseURLEnv + "}",
				"apiKey":  "{env:OPENAI_API_KEY}",
			},
			"models": map[string]any{model: map[string]any{"name": model, "tool_call": true}},
		}},
	}
}

// opencodeLockServer gives the agent's HTTP server a password of its own.
// `opencode acp` serves its ACP side through an HTTP server of its own on
// 127.0.0.1 (port 4096 when free), which without OPENCODE_SERVER_PASSWORD
// answers anyone who connects: any local account could drive the agent
// (sessions, shells, the model through its key) as this user. With a
// random password only opencode's own client, which reads it from its
// environment, gets in. An operator's own password (agents.yaml env) is
// kept.
func opencodeLockServer(env []string) ([]string, error) {
	if Getenv(env, "OPENCODE_SERVER_PASSWORD") != "" {
		return env, nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return acpSetenv(env, "OPENCODE_SERVER_PASSWORD", hex.EncodeToString(b)), nil
}
