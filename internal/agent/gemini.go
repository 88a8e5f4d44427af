package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// GeminiDefaultModel is used when a request names none: gemini-cli's own
// default routes each turn through an extra classifier call.
const GeminiDefaultModel = "gemini-2.5-flash"

func init() { Register("gemini", NewGemini(nil)) }

// NewGemini is the adapter for Google's Gemini CLI, driven over ACP
// (`gemini --acp -m MODEL`). The host passes GEMINI_API_KEY and, for
// another endpoint, GOOGLE_GEMINI_BASE_URL in req.Env. When HOME has no
// ~/.gemini/settings.json, one is written selecting API-key auth with
// usage statistics, telemetry and auto-update off; general holds extra
// "general" settings for it (maxAttempts, retryFetchErrors). An existing
// settings file is the user's and is left alone.
//
// Resume would use session/load (gemini offers it and keeps sessions
// under ~/.gemini/tmp/PROJECT/chats), but gemini-cli 0.61 answers it
// "No previous sessions found for this project." for a session it has
// just written: a turn with req.Resume fails saying so (it does not
// silently start without the history).
func NewGemini(general map[string]any) *ACP {
	return &ACP{
		Key:     "GEMINI_API_KEY",
		Install: "npm install -g @google/gemini-cli",
		Setup: func(req *Request) ([]string, error) {
			return geminiSetup(req, general)
		},
	}
}

func geminiSetup(req *Request, general map[string]any) ([]string, error) {
	home, err := acpHome(req)
	if err != nil {
		return nil, err
	}
	if err := geminiSettings(filepath.Join(home, ".gemini", "settings.json"), general); err != nil {
		return nil, err
	}
	req.Env = acpSetenv(req.Env, "GEMINI_CLI_TRUST_WORKSPACE", "true")
	req.Env = acpSetenv(req.Env, "GEMINI_CLI_NO_RELAUNCH", "true") // no second node process
	model := req.Model
	if model == "" {
		model = GeminiDefaultModel
	}
	return []string{"--acp", "-m", model}, nil
}

func geminiSettings(path string, extra map[string]any) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err // present (nil) or unreadable
	}
	general := map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
	for k, v := range extra {
		general[k] = v
	}
	data, err := json.MarshalIndent(map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   general,
	}, "", "  ")
	if err != nil {
		return err
	}
	return acpWriteFile(path, data)
}
