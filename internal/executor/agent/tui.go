package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// TUI is an adapter whose CLI has a terminal UI of its own: what a
// person runs at her shell, started for an interactive session with the
// environment a headless turn gets (the gateway's relay and placeholder,
// the confined state) and the settings that adapter writes.
type TUI interface {
	// Screen readies req's CLI for its interactive UI (its settings, and
	// what would otherwise stop it at a first-run screen) and says how
	// to run it. req.Prompt, when set, is the UI's first message.
	Screen(req Request) (Screen, error)
	// ScreenSession is the agent's own session the UI left, found after
	// it exited ("" when it left none): what a headless follow-up
	// resumes (Request.Resume).
	ScreenSession(req Request, s Screen) string
}

// Screen is how to run an agent's interactive UI: its argv (the binary
// first, not yet through req.Wrap) and whole environment, and its
// session id when the CLI is told it ahead.
type Screen struct {
	Argv, Env []string
	Session   string
	Started   time.Time // when Screen was made: what the UI writes is newer
}

// screenEnv is env with the terminal's type, which a TUI draws by (the
// executor's own environment has none).
func screenEnv(env []string) []string {
	if Getenv(env, "TERM") == "" {
		env = append(env[:len(env):len(env)], "TERM=xterm-256color")
	}
	return env
}

// editJSON reads the JSON object at path (none: empty), lets edit change
// it, and writes it back atomically when edit says it changed. What is
// not an object is left alone, and said.
func editJSON(path string, edit func(map[string]any) bool) error {
	m := map[string]any{}
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) > 64<<20:
		return fmt.Errorf("%s is over 64 MiB", path)
	case err == nil:
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return fmt.Errorf("%s is not a JSON object: %v", path, err)
		}
	case !os.IsNotExist(err):
		return err
	}
	if !edit(m) {
		return nil
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return acpWriteFile(path, out)
}

// object is m[key] as an object, made when missing or of another kind.
func object(m map[string]any, key string) map[string]any {
	o, ok := m[key].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[key] = o
	}
	return o
}
