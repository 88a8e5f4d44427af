// Command gatewaybench measures the model gateway's path (an agent's
// HTTP client, the executor's loopback relay and its door: the client's
// socket found by the kernel, its process in the task's tree, the task's
// credential put first on the connection; the daemon's gateway on a Unix
// socket with its real meter: credential check, store lookups, the
// budget's reservation, the key put on, usage read and written to the
// ledger) beside the same request made to the model directly. The model streams Anthropic SSE: a short
// answer, and one spread over a second. It prints medians of the time to
// the first byte and to the whole answer, their ratios and differences,
// and the daemon-side heap at the peak of 100 concurrent 1 s streams. It
// asserts nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/executor/door"
	relay "github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

func main() {
	rounds := flag.Int("rounds", 101, "requests per path and answer, alternating")
	flag.Parse()
	if err := run(*rounds); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

type sample struct{ first, whole time.Duration }

func run(rounds int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	model, err := serveModel()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "gatewaybench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base, tok, err := startGateway(ctx, dir, model)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	// A new connection for each request: what the relay's door costs
	// (each connection's socket and holder are looked up once).
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, c := range []struct {
		answer, label string
		client        *http.Client
	}{{"short", "short", client}, {"1s", "1s", client}, {"short", "short answer, new connection each:", fresh}} {
		var direct, through []sample
		for range rounds {
			d, err := ask(c.client, "http://"+model, "sk-real", c.answer)
			if err != nil {
				return err
			}
			g, err := ask(c.client, base, tok, c.answer)
			if err != nil {
				return err
			}
			direct, through = append(direct, d), append(through, g)
		}
		report(c.label, direct, through)
	}
	return peakHeap(client, base, tok)
}

func report(label string, direct, through []sample) {
	df, dw := medians(direct)
	gf, gw := medians(through)
	if !strings.HasSuffix(label, ":") {
		label += " answer,"
	}
	fmt.Printf("gateway %-6s median of %d: first byte direct %v, through the gateway %v (%.2fx, +%v); whole answer direct %v, through %v (%.3fx, +%v)\n",
		label, len(direct), df, gf, ratio(gf, df), gf-df, dw, gw, ratio(gw, dw), gw-dw)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func medians(s []sample) (time.Duration, time.Duration) {
	f := make([]time.Duration, len(s))
	w := make([]time.Duration, len(s))
	for i, x := range s {
		f[i], w[i] = x.first, x.whole
	}
	slices.Sort(f)
	slices.Sort(w)
	return f[len(f)/2], w[len(w)/2]
}

// ask sends one streamed Messages request with key and times its answer.
func ask(c *http.Client, base, key, answer string) (sample, error) {
	body := `{"model":"stand-in","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"` + answer + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return sample{}, fmt.Errorf("first byte: %w (status %d)", err, resp.StatusCode)
	}
	first := time.Since(t0)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return sample{}, err
	}
	if resp.StatusCode != 200 {
		return sample{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	return sample{first, time.Since(t0)}, nil
}

// serveModel is an Anthropic Messages stand-in on loopback: a stream of
// ten text deltas, sent at once ("short") or 100 ms apart ("1s"), with
// usage in message_start and message_delta.
func serveModel() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			gap := time.Duration(0)
			if strings.Contains(string(b), `"1s"`) {
				gap = 100 * time.Millisecond
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fl := http.NewResponseController(w)
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"stand-in\",\"usage\":{\"input_tokens\":120,\"output_tokens\":1}}}\n\n")
			_ = fl.Flush()
			for i := range 10 {
				time.Sleep(gap)
				fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word %d \"}}\n\n", i)
				_ = fl.Flush()
			}
			fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":17}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		}))
	}()
	return ln.Addr().String(), nil
}

// startGateway serves the gateway as the daemon does, with its real
// meter over a store holding one running task, behind the executor's
// relay and its door; it returns the relay's base URL and the key the
// agent holds (the placeholder).
func startGateway(ctx context.Context, dir, model string) (string, string, error) {
	db, err := store.Open(filepath.Join(dir, "agor.db"))
	if err != nil {
		return "", "", err
	}
	uid := uint32(os.Getuid())
	if _, err := db.CreateSession(store.Session{ID: "s1", UnixUser: "bench", UID: int64(uid), AgenticTool: "claude-code"}); err != nil {
		return "", "", err
	}
	if _, err := db.CreateTask(store.Task{ID: "t1", SessionID: "s1", UnixUser: "bench", UID: int64(uid), Prompt: "p", Status: store.Running}); err != nil {
		return "", "", err
	}
	creds, err := credstore.Open(filepath.Join(dir, "credentials"), make([]byte, credstore.KeySize))
	if err != nil {
		return "", "", err
	}
	if err := creds.Set(credstore.Daemon, "ANTHROPIC_API_KEY", "sk-real"); err != nil {
		return "", "", err
	}
	cfg := config.DefaultGateway()
	cfg.Upstreams["anthropic"] = "http://" + model
	cfg.Budgets.Default = config.BudgetSet{MonthCost: 1e9} // checked on every request, never reached
	// Priced, so that each request's worst case is reserved against the
	// budget and settled, as a priced model's is (an unpriced one is refused).
	cfg.Prices["stand-in"] = config.Price{Input: 3, Output: 15}
	m := &meter.Meter{Signer: meter.NewSigner(make([]byte, 32)), Store: db, Keys: creds, Config: func() config.Gateway { return cfg },
		InGroup: func(string, string) (bool, error) { return false, nil }}
	quiet := slog.New(slog.DiscardHandler)
	sock := filepath.Join(dir, "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return "", "", err
	}
	h := gateway.New(m, m, gateway.Options{Log: quiet, MaxInFlight: 100 /* one person's 100 streams */, Door: true})
	srv := &http.Server{Handler: h, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		if cred, err := peer.Of(c.(interface{ NetConn() net.Conn }).NetConn()); err == nil {
			ctx = peer.NewContext(ctx, cred)
		}
		return gateway.DoorContext(ctx, c)
	}}
	go func() { _ = srv.Serve(gateway.DoorListener(ln)) }()
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	// This process is the task's agent: its connections are the task's.
	d := &door.Door{UID: uid, Max: 128, Log: quiet}
	d.Open("t1", m.Token("t1", "s1", uid)).Started(os.Getpid())
	go func() { _ = (&relay.Relay{Socket: sock, Log: quiet, Door: d}).Serve(ctx, rl) }()
	return "http://" + rl.Addr().String(), protocol.GatewayPlaceholder, nil
}

// peakHeap runs 100 concurrent 1 s streams through the gateway and
// prints the process's heap at their peak beside before (the model and
// the clients share the process: the difference bounds the gateway's).
func peakHeap(c *http.Client, base, tok string) error {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := ask(c, base, tok, "1s"); errs <- err }()
	}
	peak := before
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		case <-time.After(20 * time.Millisecond):
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Printf("gateway: 100 concurrent 1 s streams: heap in use %.1f MiB before, %.1f MiB at the peak (+%.1f MiB: gateway, relay, model and clients together)\n",
		mib(before), mib(peak), mib(peak)-mib(before))
	return nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
