// Command egressbench measures the egress path a person under network mode
// proxy goes through (an HTTP client, the executor's loopback relay, the
// daemon's egress service on a Unix socket, the destination) beside the
// same download made directly: a 64 MiB body from a server on loopback,
// rounds alternating so that noise falls on both. It prints medians of
// throughput and time to first byte, and their ratios; it asserts nothing.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/egress"
	relay "github.com/agor-sh/agor/internal/executor/egress"
)

type nopAudit struct{}

func (nopAudit) Log(audit.Record) {}

func main() {
	size := flag.Int64("size", 64<<20, "bytes per download")
	rounds := flag.Int("rounds", 9, "downloads per path, alternating")
	flag.Parse()
	if err := run(*size, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "egressbench:", err)
		os.Exit(1)
	}
}

func run(size int64, rounds int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dest, err := serveBody(size)
	if err != nil {
		return err
	}
	proxyURL, err := startEgress(ctx, dest)
	if err != nil {
		return err
	}
	target := "http://" + named(dest) + "/body"
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: toLoopback(dest)}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}}
	var d, p, tu []sample
	for range rounds {
		s, err := fetch(direct, target, size)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		d = append(d, s)
		if s, err = fetch(proxied, target, size); err != nil {
			return fmt.Errorf("through the egress path: %w", err)
		}
		p = append(p, s)
		if s, err = fetchTunnel(proxyURL.Host, named(dest), size); err != nil {
			return fmt.Errorf("through a CONNECT tunnel: %w", err)
		}
		tu = append(tu, s)
	}
	dm, pm, tm := median(d), median(p), median(tu)
	fmt.Printf("egress: %d MiB download, median of %d rounds each (%s, served on loopback)\n", size>>20, rounds, benchAddr)
	fmt.Printf("  direct:               %8.0f MiB/s  first byte %6.0f µs\n", dm.mibps, dm.ttfb)
	fmt.Printf("  egress path:          %8.0f MiB/s  first byte %6.0f µs  (relay, Unix socket, egress service)\n", pm.mibps, pm.ttfb)
	fmt.Printf("  egress CONNECT:       %8.0f MiB/s  first byte %6.0f µs  (the same, tunnelled as https is)\n", tm.mibps, tm.ttfb)
	fmt.Printf("  ratio plain/direct:   throughput %.2f  first byte %.1fx (+%.0f µs)\n", pm.mibps/dm.mibps, pm.ttfb/dm.ttfb, pm.ttfb-dm.ttfb)
	fmt.Printf("  ratio CONNECT/direct: throughput %.2f  first byte %.1fx (+%.0f µs)\n", tm.mibps/dm.mibps, tm.ttfb/dm.ttfb, tm.ttfb-dm.ttfb)
	return nil
}

type sample struct{ mibps, ttfb float64 }

func median(s []sample) sample {
	tp := make([]float64, len(s))
	fb := make([]float64, len(s))
	for i, x := range s {
		tp[i], fb[i] = x.mibps, x.ttfb
	}
	slices.Sort(tp)
	slices.Sort(fb)
	return sample{tp[len(tp)/2], fb[len(fb)/2]}
}

// fetch downloads url once: throughput of the whole, time to first byte.
func fetch(c *http.Client, url string, size int64) (sample, error) {
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		return sample{}, err
	}
	return readBody(resp, start, size)
}

func readBody(resp *http.Response, start time.Time, size int64) (sample, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("%s", resp.Status)
	}
	buf := make([]byte, 64<<10)
	n, err := resp.Body.Read(buf)
	first := time.Since(start)
	rest, err2 := io.CopyBuffer(io.Discard, resp.Body, buf)
	if err2 != nil {
		return sample{}, err2
	}
	if err != nil && err != io.EOF {
		return sample{}, err
	}
	if got := int64(n) + rest; got != size {
		return sample{}, fmt.Errorf("got %d bytes, want %d", got, size)
	}
	total := time.Since(start).Seconds()
	return sample{mibps: float64(size) / (1 << 20) / total, ttfb: float64(first.Microseconds())}, nil
}

// fetchTunnel downloads through a CONNECT tunnel opened at the relay,
// as a client reaching an https:// URL through the proxy does.
func fetchTunnel(relayAddr, dest string, size int64) (sample, error) {
	start := time.Now()
	c, err := net.Dial("tcp", relayAddr)
	if err != nil {
		return sample{}, err
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return sample{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("CONNECT: %s", resp.Status)
	}
	fmt.Fprintf(c, "GET /body HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", dest)
	if resp, err = http.ReadResponse(br, nil); err != nil {
		return sample{}, err
	}
	return readBody(resp, start, size)
}

// serveBody serves size bytes at /body on loopback.
func serveBody(size int64) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	chunk := make([]byte, 1<<20)
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(size))
			for left := size; left > 0; {
				n := min(left, int64(len(chunk)))
				if _, err := w.Write(chunk[:n]); err != nil {
					return
				}
				left -= n
			}
		}))
	}()
	return ln.Addr().String(), nil
}

// benchAddr names the destination in the URLs the bench fetches: an
// address of the documentation range (RFC 5737), because the egress
// service never dials loopback for anyone. Its Dial, and the direct
// client's, take that address to the server on loopback, so both paths
// end in the same local connection and no packet leaves the host.
const benchAddr = "192.0.2.10"

// named is dest (127.0.0.1:PORT) as the bench's URLs name it.
func named(dest string) string {
	_, port, _ := net.SplitHostPort(dest)
	return net.JoinHostPort(benchAddr, port)
}

// toLoopback dials dest, on loopback, for a connection to named(dest).
func toLoopback(dest string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != named(dest) {
			return nil, fmt.Errorf("egressbench dials only %s, not %s", named(dest), addr)
		}
		return d.DialContext(ctx, network, dest)
	}
}

// startEgress runs the daemon's egress service on a Unix socket, with a
// policy that lists the destination's address, and the executor's relay
// in front of it; it returns the relay's proxy URL.
func startEgress(ctx context.Context, dest string) (*url.URL, error) {
	dir, err := os.MkdirTemp("", "egressbench")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "egress.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	set := config.NetworkSet{Mode: config.NetworkProxy, Allow: []string{named(dest)}}
	svc := &egress.Service{Audit: nopAudit{}, Log: slog.New(slog.DiscardHandler), Dial: toLoopback(dest),
		Person: func(_ context.Context, uid uint32) (egress.Person, error) {
			return egress.Person{Name: "bench", UID: uid, Set: set}, nil
		}}
	go func() { _ = svc.Serve(ctx, uln) }()
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay.Relay{Socket: sock, Log: slog.New(slog.DiscardHandler)}
	go func() { _ = r.Serve(ctx, tln) }()
	return url.Parse("http://" + tln.Addr().String())
}
