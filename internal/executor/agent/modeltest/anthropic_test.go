package modeltest

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// post sends one streamed messages request offering a tool, with msgs
// (JSON messages) as its conversation, and returns the reply's stream.
func post(t *testing.T, a *Anthropic, msgs string) string {
	t.Helper()
	body := `{"stream":true,"tools":[{"name":"Bash"}],"messages":[` + msgs + `]}`
	resp, err := http.Post(a.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

// Two conversations at once (two people's prompts against one stand-in)
// each end their own tool turn with its text when their own tool_result
// comes, whatever the other did meanwhile. The stand-in once kept only
// the last call's id, so the first conversation's result started a new
// tool turn, which in the suite was a second permission question nobody
// answered (a minute's wait for its timeout).
func TestAnthropicConversationsSideBySide(t *testing.T) {
	a := NewAnthropic(t, AnthTurn{Bash: "true", Text: "first done"}, AnthTurn{Bash: "true", Text: "second done"})
	user := `{"role":"user","content":"go"}`
	one := post(t, a, user)
	two := post(t, a, user)
	for _, r := range []string{one, two} {
		if !strings.Contains(r, "tool_use") {
			t.Fatalf("a first request got no tool call:\n%s", r)
		}
	}
	result := func(id string) string {
		return user + `,{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"Bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`
	}
	if r := post(t, a, result("toolu_standin01")); !strings.Contains(r, "first done") || strings.Contains(r, "tool_use") {
		t.Errorf("the first conversation's result did not end its turn:\n%s", r)
	}
	if r := post(t, a, result("toolu_standin02")); !strings.Contains(r, "second done") || strings.Contains(r, "tool_use") {
		t.Errorf("the second conversation's result did not end its turn:\n%s", r)
	}
}
