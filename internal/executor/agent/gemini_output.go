package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// geminiRecordWait bounds how long a tool result waits for gemini to
// write the call's record: it does so just after the tool_call_update.
const geminiRecordWait = 2 * time.Second

// geminiRecordLine bounds one line of a session record read for output.
const geminiRecordLine = 16 << 20

// geminiToolOutput is what gemini's tool call id printed, as its model
// was told: gemini-cli 0.61 sends a shell call's tool_call_update with
// "content": [] (its display form is not text), but records the call's
// functionResponse in the session's record
// (~/.gemini/tmp/PROJECT/chats/session-STAMP-ID8.jsonl, or
// session-STAMP-ID8-rN.jsonl once resumed: geminiSetAsideSession) right
// after. "" when the record does not have it within geminiRecordWait.
func geminiToolOutput(ctx context.Context, env []string, sessionID, toolCallID string) string {
	home := geminiHome(env)
	if len(sessionID) < 8 || home == "" {
		return ""
	}
	chats := filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+sessionID[:8])
	deadline := time.Now().Add(geminiRecordWait)
	for {
		files, _ := filepath.Glob(chats + ".jsonl")
		aside, _ := filepath.Glob(chats + "-r*.jsonl")
		for _, f := range append(files, aside...) {
			if out, ok := geminiRecordedOutput(f, toolCallID); ok {
				return out
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// geminiRecordedOutput scans one session record for the call's response.
func geminiRecordedOutput(path, toolCallID string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), geminiRecordLine)
	needle := []byte(`"` + toolCallID + `"`)
	out, found := "", false
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), needle) {
			continue
		}
		if o, ok := geminiCallOutput(sc.Bytes(), toolCallID); ok {
			out, found = o, true
		}
	}
	return out, found
}

// geminiCallOutput reads a record line's toolCalls for the call's output.
func geminiCallOutput(line []byte, toolCallID string) (string, bool) {
	var msg struct {
		ToolCalls []struct {
			ID     string `json:"id"`
			Result []struct {
				FunctionResponse struct {
					Response struct {
						Output string `json:"output"`
						Error  string `json:"error"`
					} `json:"response"`
				} `json:"functionResponse"`
			} `json:"result"`
		} `json:"toolCalls"`
	}
	if json.Unmarshal(line, &msg) != nil {
		return "", false
	}
	for _, c := range msg.ToolCalls {
		if c.ID != toolCallID || len(c.Result) == 0 {
			continue
		}
		r := c.Result[0].FunctionResponse.Response
		out := r.Output
		if out == "" {
			out = r.Error
		}
		return geminiUnwrap(out), true
	}
	return "", false
}

// geminiUnwrap takes off the <untrusted_context> wrapper gemini puts
// around what it tells the model a command printed.
func geminiUnwrap(s string) string {
	s = strings.TrimSpace(s)
	if inner, ok := strings.CutPrefix(s, "<untrusted_context>"); ok {
		s = strings.TrimSpace(strings.TrimSuffix(inner, "</untrusted_context>"))
	}
	return s
}
