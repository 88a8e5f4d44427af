package agent

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

var _ TUI = Claude{}

// Screen is `claude [--session-id NEW | --resume ID] [--model M]
// --permission-mode X [-- PROMPT]`: a new session gets its id from us,
// so the follow-up knows it without reading the screen.
func (Claude) Screen(req Request) (Screen, error) {
	mode, ok := claudeModes[req.PermissionMode]
	if !ok {
		return Screen{}, fmt.Errorf("claude-code: unknown permission mode %q", req.PermissionMode)
	}
	s := Screen{Argv: []string{req.Binary}, Env: screenEnv(claudeEnv(req.Env)), Session: req.Resume, Started: time.Now()}
	if s.Session == "" {
		s.Session = newUUID()
		s.Argv = append(s.Argv, "--session-id", s.Session)
	} else {
		s.Argv = append(s.Argv, "--resume", s.Session)
	}
	if req.Model != "" {
		s.Argv = append(s.Argv, "--model", req.Model)
	}
	s.Argv = append(s.Argv, "--permission-mode", mode)
	if req.Prompt != "" {
		s.Argv = append(s.Argv, "--", req.Prompt)
	}
	if err := claudeFirstRun(s.Env, req.Cwd); err != nil {
		return Screen{}, fmt.Errorf("claude-code: %w", err)
	}
	return s, nil
}

// ScreenSession is the session the UI was given, once its transcript
// exists (a UI left before anything was said has none to resume).
func (Claude) ScreenSession(req Request, s Screen) string {
	found, _ := filepath.Glob(filepath.Join(claudeConfigDir(s.Env), "projects", "*", s.Session+".jsonl"))
	if len(found) == 0 {
		return ""
	}
	return s.Session
}

// claudeConfigDir is where Claude Code keeps its sessions.
func claudeConfigDir(env []string) string {
	if d := Getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(Getenv(env, "HOME"), ".claude")
}

// claudeFirstRun answers, in Claude Code's own state file, the screens
// its UI would stop at before the person could type: the first-run
// wizard, trusting the working directory (the person chose it: it is
// where she stands), and using the gateway's placeholder as the key
// (it names nothing; Claude Code keeps the last 20 characters of keys
// the person approved). Her own choices there are kept.
func claudeFirstRun(env []string, cwd string) error {
	path := filepath.Join(Getenv(env, "HOME"), ".claude.json")
	if d := Getenv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		path = filepath.Join(d, ".claude.json")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return editJSON(path, func(m map[string]any) bool {
		changed := false
		if m["hasCompletedOnboarding"] != true {
			m["hasCompletedOnboarding"], changed = true, true
		}
		project := object(object(m, "projects"), cwd)
		if project["hasTrustDialogAccepted"] != true {
			project["hasTrustDialogAccepted"], changed = true, true
		}
		if Getenv(env, "ANTHROPIC_API_KEY") == protocol.GatewayPlaceholder {
			keys := object(m, "customApiKeyResponses")
			approved, _ := keys["approved"].([]any)
			if !slices.Contains(approved, any(keySuffix(protocol.GatewayPlaceholder))) {
				keys["approved"], changed = append(approved, keySuffix(protocol.GatewayPlaceholder)), true
			}
		}
		return changed
	})
}

// keySuffix is how Claude Code remembers an approved key.
func keySuffix(key string) string {
	if len(key) > 20 {
		return key[len(key)-20:]
	}
	return key
}

// newUUID is a random (version 4) UUID, the form Claude Code's
// --session-id takes.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
