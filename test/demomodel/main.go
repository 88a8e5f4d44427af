// Command demomodel serves a stand-in model API on 127.0.0.1 where there is
// no model API to reach (the make run demo, the real-systemd suite). By
// default it is Anthropic's Messages API: one turn in which the model runs
// a shell command through Claude Code's Bash tool and then answers (then
// -plain text-only turns, for follow-up prompts). With -api it is instead
// OpenAI's Responses API for codex (which runs -bash), Gemini's API for
// gemini or OpenAI's chat completions for opencode (these two run the
// command the prompt names after modeltest's marker). It prints its URL
// and serves until killed.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/executor/agent/modeltest"
)

func main() {
	bash := flag.String("bash", "echo 'written by the agent as '$(id -un) > agent-demo.txt; cat agent-demo.txt", "the command the model asks the Bash tool to run")
	text := flag.String("text", "Done: agent-demo.txt is in your home directory.", "the model's answer after the command")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on (loopback, or a private namespace's)")
	plain := flag.Int("plain", 0, "answer this many further turns (follow-up prompts) with text only")
	tools := flag.Int("tools", 1, "anthropic: play the tool turn this many times (one per prompt) before the -plain turns")
	api := flag.String("api", "anthropic", "the API to stand in for: anthropic, openai-responses, gemini or openai-chat")
	files := flag.String("files", "", "also serve this `directory`'s files under /files/ (the egress checks' plain file server)")
	logReqs := flag.Bool("log", false, "log each request to stderr: method, path, whether it asked to stream, status and bytes answered")
	flag.Parse()
	url, handler, err := serve(*api, *bash, *text, *tools, *plain)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demomodel:", err)
		os.Exit(2)
	}
	if *logReqs {
		handler = logged(handler)
	}
	if *files != "" {
		mux := http.NewServeMux()
		mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(*files))))
		mux.Handle("/", handler)
		handler = mux
	}
	if *listen != "127.0.0.1:0" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "demomodel:", err)
			os.Exit(1)
		}
		go func() { _ = http.Serve(ln, handler) }()
		url = "http://" + ln.Addr().String() + basePath(url) // the stand-in's path (/v1) on our port
	}
	fmt.Println(url)
	_ = os.Stdout.Sync()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
}

// basePath is the path of a stand-in's base URL ("" or "/v1").
func basePath(u string) string {
	rest := strings.TrimPrefix(u, "http://")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return ""
}

// serve starts the stand-in of api: its base URL (as the CLI's
// configuration wants it) and its handler.
func serve(api, bash, text string, tools, plain int) (string, http.Handler, error) {
	switch api {
	case "anthropic":
		var script []modeltest.AnthTurn
		for range tools {
			script = append(script, modeltest.AnthTurn{Bash: bash, Text: text})
		}
		for i := range plain {
			script = append(script, modeltest.AnthTurn{Text: fmt.Sprintf("Noted (follow-up %d).", i+1)})
		}
		srv := modeltest.ServeAnthropic(script...)
		return srv.URL, withRequests(srv.Config.Handler, anthropicSeen(srv)), nil
	case "openai-responses":
		// Usage as codex's real answers carry it: most of the input cached.
		usage := modeltest.OpenAIUsage{InputTokens: 1300, CachedInputTokens: 1024, OutputTokens: 42}
		srv := modeltest.ServeOpenAIResponses(modeltest.OpenAIResponsesScript{Text: text, Command: bash, Usage: usage})
		return srv.URL, withRequests(srv.Handler(), responsesSeen(srv)), nil
	case "gemini":
		srv := modeltest.ServeGemini()
		return srv.URL, withRequests(srv.Handler(), geminiSeen(srv)), nil
	case "openai-chat":
		srv := modeltest.ServeOpenAIChat()
		return srv.URL, withRequests(srv.Handler(), chatSeen(srv)), nil
	}
	return "", nil, fmt.Errorf("-api %q: want anthropic, openai-responses, gemini or openai-chat", api)
}

// seen is one request a stand-in answered, as GET /stand-in/requests
// lists it: the key it was sent and the usage it reported, in agor's
// terms (Input is the uncached part), for a check to compare with what
// agor recorded.
type seen struct {
	Key        string `json:"key"`
	Input      int64  `json:"input"`
	Output     int64  `json:"output"`
	CacheRead  int64  `json:"cache_read"`
	CacheWrite int64  `json:"cache_write"`
}

// withRequests adds GET /stand-in/requests to a stand-in's handler.
func withRequests(h http.Handler, list func() []seen) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /stand-in/requests", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list())
	})
	return mux
}

func anthropicSeen(srv *modeltest.Anthropic) func() []seen {
	return func() (out []seen) {
		for _, r := range srv.Requests() {
			u := r.Usage
			out = append(out, seen{r.APIKey, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens})
		}
		return out
	}
}

func responsesSeen(srv *modeltest.OpenAIResponses) func() []seen {
	return func() (out []seen) {
		for _, r := range srv.Requests() {
			u := r.Usage
			out = append(out, seen{strings.TrimPrefix(r.Authorization, "Bearer "), u.InputTokens - u.CachedInputTokens, u.OutputTokens, u.CachedInputTokens, 0})
		}
		return out
	}
}

func chatSeen(srv *modeltest.OpenAIChat) func() []seen {
	return func() (out []seen) {
		for _, r := range srv.Requests() {
			u := r.Usage
			out = append(out, seen{r.Key, u.InputTokens - u.CachedInputTokens, u.OutputTokens, u.CachedInputTokens, 0})
		}
		return out
	}
}

func geminiSeen(srv *modeltest.Gemini) func() []seen {
	return func() (out []seen) {
		for _, r := range srv.Requests() {
			u := r.Usage
			out = append(out, seen{r.Key, u.PromptTokens - u.CachedTokens, u.CandidatesTokens, u.CachedTokens, 0})
		}
		return out
	}
}

// logged logs each request as it ends, with what a failed turn needs to
// be read: whether the client asked to stream (a CLI whose stream broke
// asks again without), and how the answer went.
func logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Stream *bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		stream := "-"
		if req.Stream != nil {
			stream = strconv.FormatBool(*req.Stream)
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		t0 := time.Now()
		h.ServeHTTP(rec, r)
		log.Printf("%s %s stream=%s body=%d -> %d, %d bytes in %s", r.Method, r.URL.Path, stream, len(body), rec.status, rec.n, time.Since(t0).Round(time.Millisecond))
	})
}

type recorder struct {
	http.ResponseWriter
	status int
	n      int
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }
func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.n += n
	return n, err
}
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
