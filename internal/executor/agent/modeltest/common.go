package modeltest

import (
	"encoding/json"
	"strings"
)

// distinct keeps the first of each value, in order (the API keys seen).
func distinct(values []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// contentText flattens an OpenAI-style content field, a string or a list
// of parts with text, joining the parts with sep.
func contentText(raw json.RawMessage, sep string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, p := range contentParts(raw) {
		b.WriteString(p + sep)
	}
	return b.String()
}

// contentParts are the texts of a content field: a string (one part) or
// a list of parts with text (Anthropic's blocks too).
func contentParts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

// userTexts are the text parts of the messages whose role is user, in
// order, and where the last such message's begin (recall's arguments).
func userTexts[M any](msgs []M, part func(M) (role string, content json.RawMessage)) ([]string, int) {
	var texts []string
	latest := 0
	for _, m := range msgs {
		role, content := part(m)
		if role != "user" {
			continue
		}
		latest = len(texts)
		texts = append(texts, contentParts(content)...)
	}
	return texts, latest
}

// RecallMarker in the latest user message makes a stand-in answer with
// RecallPrefix and what the user said before it in the conversation the
// agent sent: the model's view of the history, so that a test of a
// resumed session judges from the request whether the agent loaded it.
const RecallMarker = "What did I tell you before?"

// RecallPrefix starts a recall answer.
const RecallPrefix = "You told me: "

// Bounds of a recall answer: each earlier text part, and all of them.
const (
	recallPartMax  = 300
	recallTotalMax = 4000
)

// recall answers RecallMarker. texts are the user's text parts in the
// order sent, the latest user message's from index latest on; ok is
// false when no part of that message holds the marker. Parts the agent
// wrote itself (<session_context>, <environment_context>,
// <system-reminder>: they start with "<") are left out.
func recall(texts []string, latest int) (string, bool) {
	at := -1
	for i := max(latest, 0); i < len(texts); i++ {
		if strings.Contains(texts[i], RecallMarker) {
			at = i
		}
	}
	if at < 0 {
		return "", false
	}
	var said []string
	for _, t := range texts[:at] {
		t = strings.Join(strings.Fields(t), " ")
		if t == "" || strings.HasPrefix(t, "<") {
			continue
		}
		if r := []rune(t); len(r) > recallPartMax {
			t = string(r[:recallPartMax])
		}
		said = append(said, t)
	}
	out := RecallPrefix + strings.Join(said, " / ")
	if r := []rune(out); len(r) > recallTotalMax {
		out = string(r[:recallTotalMax])
	}
	return out, true
}
