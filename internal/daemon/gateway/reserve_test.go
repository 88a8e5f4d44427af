package gateway

import "testing"

// Each API's own output bound is read from the body; a token count
// holds nothing; a body naming none, or unreadable, asks for 0 (the
// model's limit is then the meter's to take).
func TestAskOf(t *testing.T) {
	for _, tc := range []struct {
		api   API
		path  string
		body  string
		max   int64
		count bool
	}{
		{Anthropic, "/v1/messages", `{"max_tokens":32000,"thinking":{"budget_tokens":10000}}`, 32000, false},
		{Anthropic, "/v1/messages/count_tokens", `{"messages":[]}`, 0, true},
		{OpenAIChat, "/v1/chat/completions", `{"max_tokens":100}`, 100, false},
		{OpenAIChat, "/v1/chat/completions", `{"max_completion_tokens":500,"n":3}`, 1500, false},
		{OpenAIResponses, "/v1/responses", `{"max_output_tokens":4096,"max_tokens":9}`, 4096, false},
		{Gemini, "/v1beta/models/gemini-2.5-pro:generateContent", `{"generationConfig":{"maxOutputTokens":8192,"thinkingConfig":{"thinkingBudget":1024}}}`, 9216, false},
		{Gemini, "/v1beta/models/gemini-2.5-pro:generateContent", `{"generationConfig":{"thinkingConfig":{"thinkingBudget":-1}}}`, 0, false},
		{Gemini, "/v1beta/models/gemini-2.5-pro:countTokens", `{}`, 0, true},
		{Anthropic, "/v1/messages", `{"max_tokens":-5}`, 0, false},
		{Anthropic, "/v1/messages", `not json`, 0, false},
	} {
		a := askOf(tc.api, tc.path, "m", []byte(tc.body))
		if a.MaxOutput != tc.max || a.Count != tc.count || a.Bytes != int64(len(tc.body)) || a.Model != "m" {
			t.Errorf("%s %s %s: %+v, want max %d count %v", tc.api, tc.path, tc.body, a, tc.max, tc.count)
		}
	}
}
