package agent

import (
	"fmt"
	"time"
)

var _ TUI = (*ACP)(nil)

// ACPScreen is how an ACP agent's CLI runs its own UI, after the same
// Setup as a headless run (its settings, variables and model).
type ACPScreen struct {
	// Args is the UI's arguments, given the request (Setup done) and
	// the arguments Setup returned for the headless run.
	Args func(req Request, headless []string) []string
	// Session finds the session the UI left ("" none).
	Session func(req Request, s Screen) string
}

// Screen implements TUI for an agent with a UI.
func (a *ACP) Screen(req Request) (Screen, error) {
	if a.UI == nil {
		return Screen{}, fmt.Errorf("this agent has no interactive UI here")
	}
	headless, err := a.Setup(&req)
	if err != nil {
		return Screen{}, err
	}
	argv := append([]string{req.Binary}, a.UI.Args(req, headless)...)
	return Screen{Argv: argv, Env: screenEnv(req.Env), Session: req.Resume, Started: time.Now()}, nil
}

// ScreenSession implements TUI.
func (a *ACP) ScreenSession(req Request, s Screen) string {
	if a.UI == nil {
		return ""
	}
	return a.UI.Session(req, s)
}
