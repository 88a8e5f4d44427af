package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Ask is what a request body says it may spend, for its reservation.
type Ask struct {
	Model string
	// MaxOutput is the most output tokens the request asks for, in its
	// API's own field (all choices together); 0 when it names none.
	MaxOutput int64
	Bytes     int64 // the body's size: the input it carries
	// Count: a token count (count_tokens, countTokens), which generates
	// nothing and is not charged.
	Count bool
}

// Reserver is an Authorizer that holds a request's worst case against
// its person's budget once its body is read, before it is sent. A
// *Refusal error is shown to the client; the request is not sent.
// release gives the hold back; the gateway calls it once the request's
// Entry is recorded, and on every path that ends the request, so an
// implementation may be called more than once and must release once.
type Reserver interface {
	Reserve(grant Grant, ask Ask) (release func(), err error)
}

// askOf is what body, sent to path in api's shape, asks for.
func askOf(api API, path, model string, body []byte) Ask {
	a := Ask{Model: model, Bytes: int64(len(body)),
		Count: strings.HasSuffix(path, "/count_tokens") || strings.HasSuffix(path, ":countTokens")}
	var b struct {
		MaxTokens           int64 `json:"max_tokens"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
		MaxOutputTokens     int64 `json:"max_output_tokens"`
		N                   int64 `json:"n"`
		GenerationConfig    struct {
			MaxOutputTokens int64 `json:"maxOutputTokens"`
			CandidateCount  int64 `json:"candidateCount"`
			ThinkingConfig  struct {
				ThinkingBudget int64 `json:"thinkingBudget"`
			} `json:"thinkingConfig"`
		} `json:"generationConfig"`
	}
	if json.Unmarshal(body, &b) != nil {
		return a // the provider refuses it; the worst case is the model's
	}
	switch api {
	case Anthropic: // thinking's budget_tokens is within max_tokens
		a.MaxOutput = b.MaxTokens
	case OpenAIChat: // reasoning is within max_completion_tokens
		a.MaxOutput = max(b.MaxTokens, b.MaxCompletionTokens) * max(b.N, 1)
	case OpenAIResponses:
		a.MaxOutput = b.MaxOutputTokens
	case Gemini:
		gc := b.GenerationConfig
		if gc.MaxOutputTokens > 0 {
			a.MaxOutput = (gc.MaxOutputTokens + max(gc.ThinkingConfig.ThinkingBudget, 0)) * max(gc.CandidateCount, 1)
		}
	}
	if a.MaxOutput < 0 {
		a.MaxOutput = 0
	}
	return a
}

// reserve holds the request's worst case when the authorizer reserves,
// answering the client when it is refused; release is never nil.
func (g *gateway) reserve(w http.ResponseWriter, api API, grant Grant, ask Ask) (release func(), ok bool) {
	rs, is := g.auth.(Reserver)
	if !is {
		return func() {}, true
	}
	release, err := rs.Reserve(grant, ask)
	if err == nil {
		return release, true
	}
	if release != nil {
		release()
	}
	status, typ, msg := http.StatusServiceUnavailable, "", "agor: the budget could not be checked; try again"
	var no *Refusal
	if errors.As(err, &no) {
		status, typ, msg = no.Status, no.Type, no.Message
	}
	g.log.Info("gateway: refused", "api", api, "status", status, "person", grant.Person, "task", grant.Task,
		"model", ask.Model, "reason", msg)
	writeError(w, api, status, typ, msg)
	return nil, false
}
