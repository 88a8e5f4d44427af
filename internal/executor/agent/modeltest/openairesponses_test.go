package modeltest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAIResponsesWaits: while Codex reports the command still
// running (it yields after 10 s), the stand-in waits for it with
// write_stdin rather than end the turn with the command still going;
// once it has exited, the turn ends with Text.
func TestOpenAIResponsesWaits(t *testing.T) {
	s := NewOpenAIResponses(t, OpenAIResponsesScript{Text: "done.", Command: "sleep 20"})
	tools := `[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{}}}},` +
		`{"type":"function","name":"write_stdin","parameters":{"properties":{"session_id":{}}}}]`
	for _, c := range []struct{ output, want string }{
		{"", `exec_command {"cmd":"sleep 20"}`},
		{"Chunk ID: a\nWall time: 10.0 seconds\nProcess running with session ID 7\nOutput:\n", `write_stdin {"chars":"","session_id":7,"yield_time_ms":30000}`},
		{"Chunk ID: b\nWall time: 9.9 seconds\nProcess exited with code 0\nOutput:\n", "message done."},
	} {
		input := `[{"type":"message","role":"user","content":"go"}`
		if c.output != "" {
			b, _ := json.Marshal(c.output)
			input += `,{"type":"function_call_output","call_id":"c","output":` + string(b) + `}`
		}
		body := `{"model":"m","input":` + input + `],"tools":` + tools + `}`
		if got := respond(t, s.URL+"/responses", body); got != c.want {
			t.Errorf("after %q: %s, want %s", c.output, got, c.want)
		}
	}
}

// TestOpenAIResponsesCodeMode: Codex's terminal UI (0.169) declares no
// tools of the request's own but, in an additional_tools input item, code
// mode's exec, a custom tool taking a script that calls exec_command: the
// stand-in calls it with a script running Command, and answers Text
// once its custom_tool_call_output is in. (Before, it answered Text at
// once: the UI's command never ran.)
func TestOpenAIResponsesCodeMode(t *testing.T) {
	s := NewOpenAIResponses(t, OpenAIResponsesScript{Text: "done.", Command: `touch "a b"`})
	declared := `{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[` +
		`{"type":"custom","name":"exec","format":{"type":"grammar"}},{"type":"function","name":"wait","parameters":{"properties":{"cell_id":{}}}}]}]}`
	user := `{"type":"message","role":"user","content":"go"}`
	want := "custom exec const r = await tools.exec_command({ cmd: \"touch \\\"a b\\\"\" });\ntext(r.output ?? JSON.stringify(r));\n"
	if got := respond(t, s.URL+"/responses", `{"model":"m","input":[`+declared+`,`+user+`]}`); got != want {
		t.Errorf("first: %q, want %q", got, want)
	}
	ran := `{"type":"custom_tool_call_output","call_id":"call_resp_1","output":"Script completed"}`
	if got := respond(t, s.URL+"/responses", `{"model":"m","input":[`+declared+`,`+user+`,`+ran+`]}`); got != "message done." {
		t.Errorf("after its output: %q", got)
	}
	if r := s.Requests()[0]; r.ShellTool != "exec" || !r.codeMode {
		t.Errorf("request seen as shell %q, code mode %v", r.ShellTool, r.codeMode)
	}
}

// respond posts body and says what the response's item is: a call with
// its arguments, or a message with its text.
func respond(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type, Name, Arguments, Input string
				Content                      []struct{ Text string }
			} `json:"item"`
		}
		if !ok || json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "response.output_item.done" {
			continue
		}
		if ev.Item.Type == "function_call" {
			return ev.Item.Name + " " + ev.Item.Arguments
		}
		if ev.Item.Type == "custom_tool_call" {
			return "custom " + ev.Item.Name + " " + ev.Item.Input
		}
		if len(ev.Item.Content) > 0 {
			return ev.Item.Type + " " + ev.Item.Content[0].Text
		}
	}
	return "no item"
}
