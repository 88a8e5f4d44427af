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
		return srv.URL, withRequests(srv), nil
	case "openai-responses":
		srv := modeltest.ServeOpenAIResponses(modeltest.OpenAIResponsesScript{Text: text, Command: bash})
		return srv.URL, srv.Handler(), nil
	case "gemini":
		srv := modeltest.ServeGemini()
		return srv.URL, srv.Handler(), nil
	case "openai-chat":
		srv := modeltest.ServeOpenAIChat()
		return srv.URL, srv.Handler(), nil
	}
	return "", nil, fmt.Errorf("-api %q: want anthropic, openai-responses, gemini or openai-chat", api)
}

// withRequests adds GET /stand-in/requests to the Anthropic stand-in:
// each message request it answered, with the key it was sent and the
// usage it reported, for a check to compare with what agor recorded.
func withRequests(srv *modeltest.Anthropic) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", srv.Config.Handler)
	mux.HandleFunc("GET /stand-in/requests", func(w http.ResponseWriter, _ *http.Request) {
		type seen struct {
			Key   string              `json:"key"`
			Usage modeltest.AnthUsage `json:"usage"`
		}
		var out []seen
		for _, r := range srv.Requests() {
			out = append(out, seen{r.APIKey, r.Usage})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
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
