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
// ~/.gemini/tmp/PROJECT/chats, and geminiSetAsideSession keeps a resumed
// session's record where neither its reset of a session begun in the same
// minute nor its session cleanup reaches it.
func NewGemini(general map[string]any) *ACP {
	return &ACP{
		Key:     "GEMINI_API_KEY",
		Install: "npm install -g @google/gemini-cli",
		Setup: func(req *Request) ([]string, error) {
			return geminiSetup(req, general)
		},
		ToolOutput: geminiToolOutput,
		UI:         geminiScreen,
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

// geminiSessionFile matches the names a session's record may have when
// it is to be set aside: the one gemini-cli 0.61 gives a new session's
// record, session-YYYY-MM-DDTHH-MM-ID8.jsonl (the minute it began and the
// first 8 characters of the session id), and session-STAMP-rN-ID8.jsonl,
// what an earlier agor moved records to. Its groups are STAMP and ID8.
var geminiSessionFile = regexp.MustCompile(`^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-(?:r\d+-)?([A-Za-z0-9]{8})\.jsonl$`)

// geminiShortID is the start of an id gemini makes: 8 letters or digits,
// so that it is safe in a glob and a file name.
var geminiShortID = regexp.MustCompile(`^[A-Za-z0-9]{8}`)

// geminiSetAsideSession renames the records of session id under tmp
// (~/.gemini/tmp) to session-STAMP-ID8-rN.jsonl, so that gemini-cli 0.61
// can load it, now and on every later resume:
//
//   - its session/load first sets up recording as for a new session with
//     that id, appending a context-only reset to session-NOW-ID8.jsonl;
//     when NOW is the minute the session began, that is the file holding
//     the conversation, and the reset hides every message;
//   - that reset left in a file of its own has no conversation, and the
//     session cleanup every gemini start runs (general.sessionRetention,
//     on by default) deletes each such record together with every other
//     file whose name ends in the same -ID8.jsonl: the next start of gemini
//     in the project deleted the conversation, so a session's second
//     resume always failed with "No previous sessions found for this
//     project." (as would any gemini started there meanwhile).
//
// The new name is one gemini never creates and whose end is no short id,
// so nothing is ever deleted with it; gemini still lists it and loads it
// by its content, goes on recording the session in it, and ages it out
// under the user's retention settings like any other.
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
		m := geminiSessionFile.FindStringSubmatch(filepath.Base(f))
		if m == nil || m[2] != short {
			continue // not gemini's name, nor the earlier one
		}
		if err := renameAside(f, "session-"+m[1]+"-"+short); err != nil {
			return err
		}
	}
	return nil
}

// renameAside moves path to the first free PREFIX-rN.jsonl beside it,
// never replacing a file.
func renameAside(path, prefix string) error {
	for n := 1; n <= 100; n++ {
		to := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s-r%d.jsonl", prefix, n))
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
