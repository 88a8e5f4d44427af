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
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text + sep)
	}
	return b.String()
}
