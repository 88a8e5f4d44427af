package gateway

import (
	"encoding/json"
	"math"
)

// Usage is one response's token usage, as the provider reported it,
// normalised across APIs so that the four counts never overlap:
//
//   - Input is the uncached input. Anthropic's input_tokens is that
//     already (it excludes cache reads and writes); OpenAI's input_tokens
//     and prompt_tokens and Gemini's promptTokenCount include the cached
//     part, which is taken off here. Gemini's toolUsePromptTokenCount is
//     input too and added.
//   - Output is every generated token: reasoning is inside OpenAI's
//     output_tokens and completion_tokens already; Gemini's
//     thoughtsTokenCount is added to candidatesTokenCount.
//   - CacheRead is Anthropic's cache_read_input_tokens, OpenAI's
//     input_tokens_details / prompt_tokens_details cached_tokens, and
//     Gemini's cachedContentTokenCount.
//   - CacheWrite is Anthropic's cache_creation_input_tokens (the others
//     do not bill cache writes apart).
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// usagePaths are where each API's usage object sits in a response
// document (a whole body, one SSE event's data, or an element of a
// streamed JSON array, "[]").
var usagePaths = map[API][][]string{
	// A body and message_delta carry usage; message_start message.usage.
	Anthropic: {{"usage"}, {"message", "usage"}},
	// A body carries usage; response.completed, .incomplete and .failed
	// events response.usage (null in the events before).
	OpenAIResponses: {{"usage"}, {"response", "usage"}},
	// A body, and a stream's last chunk (null in the others).
	OpenAIChat: {{"usage"}},
	// A body or an SSE chunk, or a chunk of the JSON array stream.
	Gemini: {{"usageMetadata"}, {"[]", "usageMetadata"}},
}

// lastReport says which of usagePaths' entries is an answer's last
// report of usage: nothing after it changes the count, and a client that
// leaves once it has it had the whole answer. Gemini repeats usage in
// every chunk, so no report of its says it is the last.
var lastReport = map[API][]bool{
	Anthropic:       {true, false}, // message_delta or a body; not message_start
	OpenAIResponses: {true, true},  // a body; response.completed and the like
	OpenAIChat:      {true},
	Gemini:          {false, false},
}

// apply updates u with one usage object of api. A stream reports usage
// more than once: Anthropic's message_start gives input and cache counts
// and its message_delta the output so far (fields repeat there or are
// left out), so each non-zero field overwrites; the others' last report
// is the whole, so it replaces.
func apply(api API, raw []byte, u *Usage) {
	switch api {
	case Anthropic:
		var a struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
		}
		if json.Unmarshal(raw, &a) == nil {
			u.Input = overwrite(u.Input, a.Input)
			u.Output = overwrite(u.Output, a.Output)
			u.CacheRead = overwrite(u.CacheRead, a.CacheRead)
			u.CacheWrite = overwrite(u.CacheWrite, a.CacheWrite)
		}
	case OpenAIResponses:
		var o struct {
			Input   int64 `json:"input_tokens"`
			Output  int64 `json:"output_tokens"`
			Details struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
		if json.Unmarshal(raw, &o) == nil {
			*u = openAIUsage(o.Input, o.Details.Cached, o.Output)
		}
	case OpenAIChat:
		var o struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Details    struct {
				Cached int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
		if json.Unmarshal(raw, &o) == nil {
			*u = openAIUsage(o.Prompt, o.Details.Cached, o.Completion)
		}
	case Gemini:
		applyGemini(raw, u)
	}
}

func applyGemini(raw []byte, u *Usage) {
	var g struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
		ToolPrompt int64 `json:"toolUsePromptTokenCount"`
	}
	if json.Unmarshal(raw, &g) != nil {
		return
	}
	cached := nonNeg(g.Cached)
	*u = Usage{
		Input:     add(uncached(g.Prompt, cached), nonNeg(g.ToolPrompt)),
		Output:    add(nonNeg(g.Candidates), nonNeg(g.Thoughts)),
		CacheRead: cached,
	}
}

func openAIUsage(input, cached, output int64) Usage {
	cached = nonNeg(cached)
	return Usage{Input: uncached(input, cached), Output: nonNeg(output), CacheRead: cached}
}

func overwrite(old, v int64) int64 {
	if v > 0 {
		return v
	}
	return old
}

// uncached is total less its cached part, never below zero.
func uncached(total, cached int64) int64 {
	return max(nonNeg(total)-cached, 0)
}

func nonNeg(v int64) int64 { return max(v, 0) }

// add sums two non-negative counts, stopping at the largest int64.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
