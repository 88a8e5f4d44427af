package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"golang.org/x/sys/unix"
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
// Resume uses session/load; gemini keeps sessions under
// ~/.gemini/tmp/PROJECT/chats, and geminiSetAsideSession works around
// its reset of a session begun in the same minute.
func NewGemini(general map[string]any) *ACP {
	return &ACP{
		Key:     "GEMINI_API_KEY",
		Install: "npm install -g @google/gemini-cli",
		Setup: func(req *Request) ([]string, error) {
			return geminiSetup(req, general)
		},
		ToolOutput: geminiToolOutput,
	}
}

func geminiSetup(req *Request, general map[string]any) ([]string, error) {
	if _, err := acpHome(req); err != nil {
		return nil, err
	}
	home := geminiHome(req.Env)
	if err := geminiSettings(filepath.Join(home, ".gemini", "settings.json"), general); err != nil {
		return nil, err
	}
	if req.Resume != "" {
		if err := geminiSetAsideSession(filepath.Join(home, ".gemini", "tmp"), req.Resume); err != nil {
			return nil, fmt.Errorf("prepare gemini session %q for resume: %w", req.Resume, err)
		}
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

// geminiSessionFile is the name gemini-cli 0.61 gives a new session's
// record: session-YYYY-MM-DDTHH-MM-ID8.jsonl, the minute it began and the
// first 8 characters of the session id.
var geminiSessionFile = regexp.MustCompile(`^session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-[A-Za-z0-9]{8}\.jsonl$`)

// geminiShortID is the start of an id gemini makes: 8 letters or digits,
// so that it is safe in a glob and a file name.
var geminiShortID = regexp.MustCompile(`^[A-Za-z0-9]{8}`)

// geminiSetAsideSession renames the records of session id under tmp
// (~/.gemini/tmp) so that gemini-cli 0.61 can load it. Its session/load
// first sets up recording as for a new session with that id, appending a
// context-only reset to session-NOW-ID8.jsonl; when NOW is the minute the
// session began, that is the file holding the conversation, the reset
// hides every message, and the load answers "No previous sessions found
// for this project." (a follow-up within the minute always failed).
// The new name, session-YYYY-MM-DDTHH-MM-rN-ID8.jsonl, is one gemini never
// creates but still lists, loads by content and deletes by its short id.
func geminiSetAsideSession(tmp, id string) error {
	if !geminiShortID.MatchString(id) {
		return nil // not one of gemini's ids; session/load will say so
	}
	short := id[:8]
	files, err := filepath.Glob(filepath.Join(tmp, "*", "chats", "session-*-"+short+".jsonl"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if !geminiSessionFile.MatchString(filepath.Base(f)) {
			continue // already moved aside, or not gemini's name
		}
		if err := renameAside(f, short); err != nil {
			return err
		}
	}
	return nil
}

// renameAside moves session-STAMP-ID8.jsonl to the first free
// session-STAMP-rN-ID8.jsonl, never replacing a file.
func renameAside(path, short string) error {
	dir, base := filepath.Split(path)
	stamp := base[:len(base)-len(short)-len(".jsonl")] // "session-STAMP-"
	for n := 1; n <= 100; n++ {
		to := filepath.Join(dir, fmt.Sprintf("%sr%d-%s.jsonl", stamp, n, short))
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
		if !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return fmt.Errorf("%s: no free name to move it aside", path)
}

// geminiHome is where gemini keeps .gemini: $GEMINI_CLI_HOME when set (a
// confined agent's state, kept apart from the user's), else $HOME.
func geminiHome(env []string) string {
	if h := Getenv(env, "GEMINI_CLI_HOME"); filepath.IsAbs(h) {
		return h
	}
	return Getenv(env, "HOME")
}
