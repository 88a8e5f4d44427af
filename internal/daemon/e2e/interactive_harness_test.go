package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// An interactive prompt's stream and the agent UI's screen, as a test
// reads them.

// screenStream is an interactive task's prompt stream.
type screenStream struct {
	resp          *http.Response
	sc            *bufio.Scanner
	task, session string
	terminal      string
	pid           float64
	lines         []map[string]any
}

// openScreen starts an interactive prompt and reads its stream up to the
// terminal event.
func (h *harness) openScreen(t *testing.T, user string, body map[string]any) *screenStream {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := h.client.Post("http://agor/v1/executors/"+user+"/prompt", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("interactive prompt: %s", resp.Status)
	}
	s := &screenStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(make([]byte, 1<<20), 16<<20)
	for s.terminal == "" {
		l := s.next(t)
		if id, ok := l["task_id"].(string); ok {
			s.task, s.session = id, l["session_id"].(string)
		}
		if ev, ok := l["event"].(map[string]any); ok && ev["event_type"] == "terminal" {
			data := ev["event_data"].(map[string]any)["data"].(map[string]any)
			s.terminal, s.pid = data["terminal_id"].(string), data["pid"].(float64)
		}
		if l["result"] != nil || l["error"] != nil {
			t.Fatalf("the task ended before its UI ran: %v", l)
		}
	}
	return s
}

func (s *screenStream) next(t *testing.T) map[string]any {
	t.Helper()
	if !s.sc.Scan() {
		t.Fatalf("the prompt stream ended (%v) after %v", s.sc.Err(), s.lines)
	}
	var l map[string]any
	if err := json.Unmarshal(s.sc.Bytes(), &l); err != nil {
		t.Fatalf("line %q: %v", s.sc.Text(), err)
	}
	s.lines = append(s.lines, l)
	return l
}

// result reads the stream to its result.
func (s *screenStream) result(t *testing.T) map[string]any {
	t.Helper()
	for {
		l := s.next(t)
		if r, ok := l["result"].(map[string]any); ok {
			return r
		}
		if l["error"] != nil {
			t.Fatalf("the task failed: %v", l)
		}
	}
}

// escapes are a terminal's control sequences (CSI, OSC, and two-byte
// ones), which a UI puts between the words it draws.
var escapes = regexp.MustCompile(`\x1b\[[0-9;?<>=!]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_()][0-9A-Za-z]?`)

// plain is what a screen's output says, its control sequences and white
// space gone (a UI moves the cursor instead of writing spaces).
func plain(b string) string {
	s := escapes.ReplaceAllString(b, "")
	return strings.Join(strings.Fields(s), "")
}

// waitScreen reads frames until want (white space ignored) is on the
// screen, within d.
func (s *stream) waitScreen(t *testing.T, want string, d time.Duration) {
	t.Helper()
	_ = s.conn.SetDeadline(time.Now().Add(d))
	want = strings.Join(strings.Fields(want), "")
	for !strings.Contains(plain(s.seen.String()), want) {
		var f struct {
			Output []byte         `json:"output"`
			Exit   map[string]any `json:"exit"`
		}
		if err := s.dec.Decode(&f); err != nil {
			t.Fatalf("%q did not appear (%v); the screen's last words: %q", want, err, tail(plain(s.seen.String())))
		}
		out, exit := f.Output, f.Exit
		if exit != nil {
			t.Fatalf("exited %v before %q appeared; the screen's last words: %q", exit, want, tail(plain(s.seen.String())))
		}
		s.seen.Write(out)
		s.answerQueries(t, out)
	}
}

// queries are what a UI asks its terminal on starting, and a terminal
// emulator's answers: the cursor's position, the device's attributes,
// the colours (codex waits for them). A person's own terminal answers
// through agorctl; here the test is the terminal.
var queries = []struct{ ask, reply string }{
	{"\x1b[6n", "\x1b[1;1R"},
	{"\x1b[c", "\x1b[?62;22c"},
	{"\x1b]10;?", "\x1b]10;rgb:c0c0/c0c0/c0c0\x1b\\"},
	{"\x1b]11;?", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
}

// answerQueries answers the queries in one chunk of output (a query cut
// across two chunks is not seen: the UIs write each whole). A replay is
// not answered: its answers went when it was live, and more would be
// typed into the UI.
func (s *stream) answerQueries(t *testing.T, out []byte) {
	t.Helper()
	if s.replaying {
		return
	}
	for _, q := range queries {
		for range bytes.Count(out, []byte(q.ask)) {
			s.send(t, `{"input":"`+b64(q.reply)+`"}`)
		}
	}
}

// quit makes c's UI exit and returns its status.
func (s *stream) quit(t *testing.T, c screenAgent) int {
	t.Helper()
	if c.quitShown == "" {
		s.typeIn(t, c.quit, c.submit)
	} else {
		s.send(t, `{"input":"`+b64(c.quit)+`"}`)
		s.waitScreen(t, c.quitShown, time.Minute)
		s.send(t, `{"input":"`+b64(c.submit)+`"}`)
	}
	return s.waitExit(t, time.Minute)
}

// typeIn sends keys as a person types them: the text, then, once the UI
// shows it, the key that submits it (sent with the text, a UI may take
// the burst as a paste, the submit key a new line of it).
func (s *stream) typeIn(t *testing.T, text, submit string) {
	t.Helper()
	s.send(t, `{"input":"`+b64(text)+`"}`)
	s.waitScreen(t, text, time.Minute)
	s.send(t, `{"input":"`+b64(submit)+`"}`)
}

// tail is the end of a screen's words, as a failure shows them.
func tail(s string) string {
	if len(s) > 1500 {
		return s[len(s)-1500:]
	}
	return s
}

// waitExit reads frames until the program's exit, within d, and returns
// its code.
func (s *stream) waitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	_ = s.conn.SetDeadline(time.Now().Add(d))
	for {
		var f struct {
			Output []byte         `json:"output"`
			Exit   map[string]any `json:"exit"`
		}
		if err := s.dec.Decode(&f); err != nil {
			t.Fatalf("no exit (%v); the screen's last words: %q", err, tail(plain(s.seen.String())))
		}
		if f.Exit != nil {
			return int(f.Exit["exit_code"].(float64))
		}
		s.seen.Write(f.Output)
		s.answerQueries(t, f.Output)
	}
}
