package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agor-sh/agor/internal/ctl/apiclient"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// agentStream is an interactive task's prompt stream, read up to its
// terminal event (what to attach to) and, once the UI has exited, to
// its result.
type agentStream struct {
	stream        *apiclient.PromptStream
	errw          io.Writer
	task, session string
}

// terminal reads up to the terminal event and returns its terminal; a
// task that ends first (the UI could not start) is an error saying why.
func (a *agentStream) terminal() (string, error) {
	for {
		l, _, err := a.stream.Next()
		if err != nil {
			return "", fmt.Errorf("the daemon's stream ended before the agent's UI started: %w", err)
		}
		switch {
		case l.TaskID != "":
			a.task, a.session = l.TaskID, l.SessionID
		case l.Error != nil:
			return "", &apiclient.Error{ErrorDetail: l.Error.Error}
		case l.Result != nil:
			return "", fmt.Errorf("the agent's UI did not start: %s", resultWhy(l.Result))
		case l.Event != nil:
			if id := terminalOf(*l.Event); id != "" {
				return id, nil
			}
			sandboxEventWarning(a.errw, *l.Event)
		}
	}
}

// ended reads the rest of the stream and says how the session ended and
// how to go on with it.
func (a *agentStream) ended(w io.Writer) {
	for {
		l, _, err := a.stream.Next()
		if err != nil {
			break
		}
		if l.Result != nil {
			fmt.Fprintf(w, "[agorctl: task %s %s]\r\n", a.task, resultWhy(l.Result))
			break
		}
	}
	fmt.Fprintf(w, "[agorctl: continue: agorctl agent --session %s, or headless: agorctl prompt --session %s PROMPT]\r\n", a.session, a.session)
}

// terminalOf is the terminal a terminal event names ("" for any other).
func terminalOf(ev apiwire.StoredEvent) string {
	if ev.Type != protocol.EventTerminal {
		return ""
	}
	var e protocol.Event
	if json.Unmarshal(ev.Data, &e) != nil {
		return ""
	}
	id, _ := e.Data["terminal_id"].(string)
	return id
}

// resultWhy is a result's status, and its error when it failed.
func resultWhy(raw json.RawMessage) string {
	var r protocol.ExecutePromptResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return "ended with a result agorctl cannot read"
	}
	if r.Error != nil {
		return r.Status + ": " + r.Error.Message
	}
	return r.Status
}

// sandboxEventWarning says, as a terminal's spawn does, what confinement
// the agent got when it is less than asked.
func sandboxEventWarning(w io.Writer, ev apiwire.StoredEvent) {
	var e protocol.Event
	if ev.Type != protocol.EventSandbox || json.Unmarshal(ev.Data, &e) != nil {
		return
	}
	if warn, _ := e.Data["warning"].(string); warn != "" {
		fmt.Fprintf(w, "agorctl: sandbox: %s\n", warn)
	}
}
