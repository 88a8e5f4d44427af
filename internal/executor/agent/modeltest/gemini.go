package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// GeminiCommandMarker in a user message makes the Gemini stand-in ask for
// the agent's shell tool with the rest of that line as the command.
const GeminiCommandMarker = "run the shell command: "

// GeminiText is the stand-in's answer to a plain turn; GeminiDone starts its
// answer after a tool result, followed by " Tool said: " and the
// functionResponse it got.
const (
	GeminiText = "Hello from the Gemini stand-in."
	GeminiDone = "The command finished."
)

// Gemini is a stand-in for the Gemini API's streamGenerateContent (SSE):
// a plain turn answers GeminiText; a turn whose last user message holds
// GeminiCommandMarker calls the agent's shell tool (found by name in the
// request's tools) and, once the functionResponse comes back, answers
// GeminiDone; one holding RecallMarker answers with the earlier user
// messages (recall). Every request and the API key it carried are
// recorded.
type Gemini struct {
	Arrivals
	URL string

	srv  *httptest.Server
	mu   sync.Mutex
	reqs []GeminiRequest
}

// GeminiRequest is one request the stand-in saw.
type GeminiRequest struct {
	At   time.Time // when the stand-in had read it
	Path string
	Key  string // x-goog-api-key header or key query parameter
	Body json.RawMessage
	// Usage is what the answer reported: GeminiDefaultUsage for
	// generateContent and streamGenerateContent, zero for the rest
	// (countTokens, paths not served).
	Usage GeminiUsage
	// Streamed: the answer was server-sent events (streamGenerateContent).
	Streamed bool
}

// GeminiUsage is a response's usageMetadata: PromptTokens includes
// CachedTokens, as Gemini counts them.
type GeminiUsage struct {
	PromptTokens     int64 // promptTokenCount
	CandidatesTokens int64 // candidatesTokenCount
	CachedTokens     int64 // cachedContentTokenCount
}

// GeminiDefaultUsage is what every generated answer reports.
var GeminiDefaultUsage = GeminiUsage{PromptTokens: 11, CandidatesTokens: 7}

// NewGemini starts the stand-in; it stops when the test ends.
func NewGemini(t testing.TB) *Gemini {
	g := ServeGemini()
	t.Cleanup(g.srv.Close)
	return g
}

// ServeGemini starts the stand-in outside a test (the suite's demomodel);
// the caller closes it.
func ServeGemini() *Gemini {
	g := &Gemini{}
	g.srv = httptest.NewServer(g.Arrivals.wrap(g.serve))
	g.URL = g.srv.URL
	return g
}

// Handler serves the stand-in's API, for a listener of the caller's.
func (g *Gemini) Handler() http.Handler { return g.srv.Config.Handler }

// Close stops the server early (a dead model API).
func (g *Gemini) Close() { g.srv.Close() }

// Requests returns what the stand-in has seen so far.
func (g *Gemini) Requests() []GeminiRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GeminiRequest(nil), g.reqs...)
}

// Keys returns the distinct API keys seen.
func (g *Gemini) Keys() []string {
	var keys []string
	for _, r := range g.Requests() {
		keys = append(keys, r.Key)
	}
	return distinct(keys)
}

type gemPart struct {
	Text             string          `json:"text,omitempty"`
	FunctionCall     json.RawMessage `json:"functionCall,omitempty"`
	FunctionResponse json.RawMessage `json:"functionResponse,omitempty"`
}

type gemContent struct {
	Role  string    `json:"role"`
	Parts []gemPart `json:"parts"`
}

type gemBody struct {
	Contents []gemContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (g *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.record(r, body)
	var b gemBody
	_ = json.Unmarshal(body, &b)
	switch {
	case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		g.stream(w, b)
	case strings.HasSuffix(r.URL.Path, ":generateContent"):
		// Side calls (next-speaker checks and the like) want JSON text.
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(gemChunk(gemContent{Role: "model", Parts: []gemPart{{Text: `{"reasoning":"the model answered","next_speaker":"user"}`}}}, true))
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"totalTokens":10}`)
	default:
		http.Error(w, `{"error":{"code":404,"message":"not in the stand-in","status":"NOT_FOUND"}}`, http.StatusNotFound)
	}
}

// record notes a request with the key it carried and the usage its
// answer (by serve) reports.
func (g *Gemini) record(r *http.Request, body []byte) {
	req := GeminiRequest{At: time.Now(), Path: r.URL.Path, Key: r.Header.Get("x-goog-api-key"), Body: body}
	if req.Key == "" {
		req.Key = r.URL.Query().Get("key")
	}
	switch {
	case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		req.Usage, req.Streamed = GeminiDefaultUsage, true
	case strings.HasSuffix(r.URL.Path, ":generateContent"):
		req.Usage = GeminiDefaultUsage
	}
	g.mu.Lock()
	g.reqs = append(g.reqs, req)
	g.mu.Unlock()
}

func (g *Gemini) stream(w http.ResponseWriter, b gemBody) {
	w.Header().Set("Content-Type", "text/event-stream")
	last := gemLast(b.Contents)
	said, recalled := recall(gemUserTexts(b.Contents))
	switch cmd, ok := gemCommand(last); {
	case recalled:
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{Text: said}}}, true)
	case gemResponse(last) != "":
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{Text: GeminiDone}}}, false)
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{Text: " Tool said: " + gemResponse(last)}}}, true)
	case ok:
		call, _ := json.Marshal(map[string]any{"name": gemShellTool(b), "args": map[string]any{"command": cmd, "description": "run it"}})
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{FunctionCall: call}}}, true)
	default:
		half := len(GeminiText) / 2
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{Text: GeminiText[:half]}}}, false)
		gemSend(w, gemContent{Role: "model", Parts: []gemPart{{Text: GeminiText[half:]}}}, true)
	}
}

func gemLast(cs []gemContent) gemContent {
	if len(cs) == 0 {
		return gemContent{}
	}
	return cs[len(cs)-1]
}

// gemUserTexts are the text parts of the user's contents, in order, and
// where the last user content's begin.
func gemUserTexts(cs []gemContent) ([]string, int) {
	var texts []string
	latest := 0
	for _, c := range cs {
		if c.Role != "user" {
			continue
		}
		latest = len(texts)
		for _, p := range c.Parts {
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
	}
	return texts, latest
}

// gemResponse is the content's first functionResponse, as JSON.
func gemResponse(c gemContent) string {
	for _, p := range c.Parts {
		if len(p.FunctionResponse) > 0 {
			return string(p.FunctionResponse)
		}
	}
	return ""
}

func gemCommand(c gemContent) (string, bool) {
	for _, p := range c.Parts {
		if _, after, ok := strings.Cut(p.Text, GeminiCommandMarker); ok {
			cmd, _, _ := strings.Cut(after, "\n")
			return strings.TrimSpace(cmd), true
		}
	}
	return "", false
}

// gemShellTool names the agent's shell tool among the declared functions.
func gemShellTool(b gemBody) string {
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			if strings.Contains(f.Name, "shell") {
				return f.Name
			}
		}
	}
	return "run_shell_command"
}

func gemChunk(c gemContent, last bool) map[string]any {
	cand := map[string]any{"content": c, "index": 0}
	chunk := map[string]any{"candidates": []any{cand}, "modelVersion": "stand-in"}
	if last {
		cand["finishReason"] = "STOP"
		u := GeminiDefaultUsage
		meta := map[string]any{"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CandidatesTokens,
			"totalTokenCount": u.PromptTokens + u.CandidatesTokens}
		if u.CachedTokens > 0 {
			meta["cachedContentTokenCount"] = u.CachedTokens
		}
		chunk["usageMetadata"] = meta
	}
	return chunk
}

func gemSend(w http.ResponseWriter, c gemContent, last bool) {
	data, _ := json.Marshal(gemChunk(c, last))
	fmt.Fprintf(w, "data: %s\r\n\r\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
