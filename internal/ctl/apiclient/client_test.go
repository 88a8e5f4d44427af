package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// serve runs h on a Unix socket and returns a client of it.
func serve(t *testing.T, h http.Handler) *Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "daemon.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return New(path)
}

func TestDo(t *testing.T) {
	m := http.NewServeMux()
	m.HandleFunc("GET /ok", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status":"ok"}`) })
	m.HandleFunc("GET /refused", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":{"code":-32002,"reason":"not_yourself","message":"permission denied"}}`)
	})
	m.HandleFunc("GET /plain", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	c := serve(t, m)
	ctx := context.Background()

	var out struct{ Status string }
	if err := c.Do(ctx, "GET", "/ok", nil, &out); err != nil || out.Status != "ok" {
		t.Fatalf("ok: %+v, %v", out, err)
	}
	var e *Error
	err := c.Do(ctx, "GET", "/refused", nil, nil)
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Reason != "not_yourself" || err.Error() != "permission denied (not_yourself)" {
		t.Fatalf("refused: %v", err)
	}
	if err := c.Do(ctx, "GET", "/plain", nil, nil); err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("plain: %v", err)
	}
	err = New("/nonexistent/daemon.sock").Do(ctx, "GET", "/ok", nil, nil)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "daemon at /nonexistent/daemon.sock") {
		t.Fatalf("unreachable: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Do(ctx, "GET", "/ok", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A followed stream that drops resumes after the last event printed:
// none lost, none twice.
func TestEventsResume(t *testing.T) {
	var requests atomic.Int64
	var afters []string
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		afters = append(afters, r.URL.Query().Get("after"))
		switch requests.Add(1) {
		case 1:
			fmt.Fprint(w, "id: 1\nevent: event\ndata: {\"sequence\":1}\n\nid: 2\nevent: event\ndata: {\"sequence\":2}\n\n")
		default: // the connection dropped; the rest, then the end
			fmt.Fprint(w, "id: 3\nevent: event\ndata: {\"sequence\":3}\n\nevent: end\ndata: {}\n\n")
		}
	}))
	var out bytes.Buffer
	var resumed []int64
	o := EventsOptions{After: -1, Follow: true, Resumed: func(_ error, after int64) { resumed = append(resumed, after) }}
	if err := c.Events(context.Background(), "t1", o, &out); err != nil {
		t.Fatal(err)
	}
	want := "{\"sequence\":1}\n{\"sequence\":2}\n{\"sequence\":3}\n"
	if out.String() != want || len(resumed) != 1 || resumed[0] != 2 || strings.Join(afters, ",") != "-1,2" {
		t.Fatalf("output %q, resumed %v, afters %v", out.String(), resumed, afters)
	}
}

func TestEventsNotFound(t *testing.T) {
	c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":-32004,"reason":"not_found","message":"task not found"}}`)
	}))
	var e *Error
	if err := c.Events(context.Background(), "nope", EventsOptions{After: -1, Follow: true}, &bytes.Buffer{}); !errors.As(err, &e) || e.Reason != "not_found" {
		t.Fatalf("%v", err)
	}
}

// TestExecStream: the streamed exec writes each chunk to its stream as
// it comes and returns the result; an error after output is the error;
// a daemon that answers with one JSON reply is read as before.
func TestExecStream(t *testing.T) {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/executors/alice/exec", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "" {
			t.Error("no Accept header")
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, `{"stream":"stdout","data":"AAE="}`+"\n"+`{"stream":"stderr","data":"b29wcw=="}`+"\n"+`{"result":{"exit_code":3}}`+"\n")
	})
	m.HandleFunc("POST /v1/executors/bob/exec", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, `{"stream":"stdout","data":"AA=="}`+"\n"+`{"error":{"code":-32003,"reason":"executor_crashed","message":"gone"}}`+"\n")
	})
	m.HandleFunc("POST /v1/executors/carol/exec", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stdout":"hi\n","stderr":"","exit_code":1}`)
	})
	m.HandleFunc("POST /v1/executors/dave/exec", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, `{"stream":"stdout","data":"AA=="}`+"\n")
	})
	c := serve(t, m)
	ctx := context.Background()
	var out, errs bytes.Buffer
	res, err := c.Exec(ctx, "alice", apiwire.ExecBody{Argv: []string{"x"}}, &out, &errs)
	if err != nil || res.ExitCode != 3 || out.String() != "\x00\x01" || errs.String() != "oops" {
		t.Fatalf("alice: %+v %v; out %q err %q", res, err, out.String(), errs.String())
	}
	var e *Error
	if _, err := c.Exec(ctx, "bob", apiwire.ExecBody{}, &out, &errs); !errors.As(err, &e) || e.Reason != "executor_crashed" {
		t.Fatalf("bob: %v", err)
	}
	out.Reset()
	if res, err := c.Exec(ctx, "carol", apiwire.ExecBody{}, &out, &errs); err != nil || res.ExitCode != 1 || out.String() != "hi\n" {
		t.Fatalf("carol (JSON reply): %+v %v %q", res, err, out.String())
	}
	if _, err := c.Exec(ctx, "dave", apiwire.ExecBody{}, &out, &errs); !errors.Is(err, errNoResult) {
		t.Fatalf("dave (cut short): %v", err)
	}
}

// TestSessionsEveryPage: Sessions follows the daemon's pages (oldest
// first) to the newest session, and --json gets them all as one list.
func TestSessionsEveryPage(t *testing.T) {
	const n = sessionPage + 5
	var asked []string
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		from := 0
		if a := r.URL.Query().Get("after"); a != "" {
			fmt.Sscanf(a, "s%d", &from)
			from++
		}
		var out apiwire.SessionList
		for i := from; i < n && len(out.Sessions) < sessionPage; i++ {
			out.Sessions = append(out.Sessions, apiwire.SessionView{ID: fmt.Sprintf("s%05d", i), UnixUser: r.URL.Query().Get("user")})
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	got, raw, err := serve(t, m).Sessions(context.Background(), "alice")
	if err != nil || len(got.Sessions) != n || got.Sessions[n-1].ID != fmt.Sprintf("s%05d", n-1) {
		t.Fatalf("%d sessions, last %v, %v; want %d", len(got.Sessions), got.Sessions[len(got.Sessions)-1], err, n)
	}
	var again apiwire.SessionList
	if err := json.Unmarshal(raw, &again); err != nil || len(again.Sessions) != n {
		t.Fatalf("raw: %d sessions, %v", len(again.Sessions), err)
	}
	if len(asked) != 2 || !strings.Contains(asked[1], fmt.Sprintf("after=s%05d", sessionPage-1)) {
		t.Errorf("asked %v", asked)
	}
}
