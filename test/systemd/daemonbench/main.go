// Command daemonbench measures agor-daemon under real systemd, through its
// API socket: the time from "ensure the executor of a cold user" (its units
// stopped) to the first pong, repeated; and the daemon's resident memory
// while it holds connections to many live executors, and the cost of
// reading their usage counters over D-Bus. Run inside the test
// container, as root (an admin of the API).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agor-sh/agor/internal/executorunit"
)

func main() {
	sock := flag.String("api", "/run/agor/daemon.sock", "the daemon's API socket")
	user := flag.String("user", "alice", "the user whose executor is started cold, repeatedly")
	n := flag.Int("n", 21, "cold cycles")
	many := flag.String("many", "", "comma-separated users to bring up at once before reading the daemon's RSS")
	pid := flag.Int("pid", 0, "the daemon's PID, whose RSS is read")
	path := flag.String("get", "", "only GET this API path and print the body (the container has no curl)")
	flag.Parse()
	c := client(*sock)
	if *path != "" {
		body, err := get(c, *path)
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(body)
		return
	}
	if *n > 0 {
		cold(c, *user, *n)
	}
	if *many != "" {
		users := strings.Split(*many, ",")
		rss(c, users, *pid)
		usage(c, users)
	}
}

// usage measures reading the usage counters of the live executors over
// D-Bus as the daemon does (executorunit.Systemd.Usage): one property Get
// after another, and with the daemon's default number in flight; then
// GET /v1/executors, which lists the units and reads usage in one batch.
// Medians of 11 reads each.
func usage(c *http.Client, users []string) {
	const reads = 11
	ctx := context.Background()
	med := map[int]time.Duration{}
	for _, workers := range []int{1, executorunit.DefaultUsageWorkers} {
		s := &executorunit.Systemd{UsageWorkers: workers}
		var lat []time.Duration
		for range reads {
			t0 := time.Now()
			got, err := s.Usage(ctx, users)
			if err != nil || len(got) != len(users) {
				fail(fmt.Errorf("usage of %d executors: %d read, %v", len(users), len(got), err))
			}
			lat = append(lat, time.Since(t0))
		}
		s.Close()
		slices.Sort(lat)
		med[workers] = lat[reads/2]
	}
	var list []time.Duration
	for range reads {
		t0 := time.Now()
		if _, err := get(c, "/v1/executors"); err != nil {
			fail(err)
		}
		list = append(list, time.Since(t0))
	}
	slices.Sort(list)
	seq, conc := med[1], med[executorunit.DefaultUsageWorkers]
	fmt.Printf("executor_usage_read executors=%d properties=%d sequential_median_ms=%.1f concurrent_median_ms=%.1f (workers=%d) ratio=%.1fx api_list_with_usage_median_ms=%.1f n=%d\n",
		len(users), len(users)*5, ms(seq), ms(conc), executorunit.DefaultUsageWorkers, float64(seq)/float64(conc), ms(list[reads/2]), reads)
}

func cold(c *http.Client, user string, n int) {
	var lat []time.Duration
	for i := range n {
		if _, err := call(c, "DELETE", user); err != nil {
			fail(fmt.Errorf("cycle %d: stop: %w", i, err))
		}
		t0 := time.Now()
		if _, err := call(c, "PUT", user); err != nil {
			fail(fmt.Errorf("cycle %d: ensure: %w", i, err))
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	fmt.Printf("daemon_cold_ensure_ms median=%.1f min=%.1f max=%.1f n=%d\n", ms(lat[len(lat)/2]), ms(lat[0]), ms(lat[len(lat)-1]), n)
}

// rss brings every user up (8 at a time) and reads the daemon's VmRSS.
// A start that fails is tried once more, and counted: what is measured is
// the daemon holding 100 executors, and systemd here has been seen to
// leave one batch of StartUnit calls unanswered past the connection
// timeout (the daemon then answers start_failed, as it should).
func rss(c *http.Client, users []string, pid int) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed, retried []string
	for _, u := range users {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := call(c, "PUT", u)
			if err != nil {
				mu.Lock()
				retried = append(retried, u+": "+err.Error())
				mu.Unlock()
				_, err = call(c, "PUT", u)
			}
			if err != nil {
				mu.Lock()
				failed = append(failed, u+": "+err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("daemon_start_retries=%d\n", len(retried))
	for _, r := range retried {
		fmt.Printf("  retried %s\n", r)
	}
	if len(failed) > 0 {
		fail(fmt.Errorf("%d executors failed: %s", len(failed), strings.Join(failed, "; ")))
	}
	var list struct{ Executors []struct{ Connected bool } }
	body, err := get(c, "/v1/executors")
	if err != nil || json.Unmarshal(body, &list) != nil {
		fail(fmt.Errorf("list executors: %v", err))
	}
	connected := 0
	for _, e := range list.Executors {
		if e.Connected {
			connected++
		}
	}
	fmt.Printf("daemon_rss_kib=%d live_executors_connected=%d\n", daemonRSS(pid), connected)
}

func daemonRSS(pid int) int {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		fail(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func client(sock string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 16,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

func call(c *http.Client, method, user string) ([]byte, error) {
	req, _ := http.NewRequest(method, "http://agor/v1/executors/"+user, nil)
	return send(c, req)
}

func get(c *http.Client, path string) ([]byte, error) {
	req, _ := http.NewRequest("GET", "http://agor"+path, nil)
	return send(c, req)
}

func send(c *http.Client, req *http.Request) ([]byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return body, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "daemonbench:", err)
	os.Exit(1)
}
