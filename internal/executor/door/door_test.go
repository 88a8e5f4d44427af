package door

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// The tests run processes of their own: the task's agent (a child that
// makes requests through the relay when told) and another account's
// (a child, as uid nobody, that holds connections open). The test binary
// runs again in those roles (TestMain, AGOR_DOOR_ROLE).
func TestMain(m *testing.M) {
	switch os.Getenv("AGOR_DOOR_ROLE") {
	case "agent":
		os.Exit(agentRole(os.Getenv("AGOR_DOOR_ADDR")))
	case "hold":
		n, _ := strconv.Atoi(os.Getenv("AGOR_DOOR_N"))
		os.Exit(holdRole(os.Getenv("AGOR_DOOR_ADDR"), n))
	case "churn":
		os.Exit(churnRole(os.Getenv("AGOR_DOOR_ADDR")))
	}
	goleak.VerifyTestMain(m)
}

// agentRole answers each line on stdin ("N") with N requests made at once
// through the relay at addr, each on a new connection (each through the
// door): "STATUS[:BODY],... MS" (the body when 200: the credential the
// gateway heard), the slowest request's time. Its requests are written
// raw, as curl does: a refusal the relay wrote before reading is read as
// the answer (Go's client would call it unsolicited).
func agentRole(addr string) int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		n, _ := strconv.Atoi(sc.Text())
		statuses := make([]string, n)
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { statuses[i] = request(addr) })
		}
		wg.Wait()
		fmt.Printf("%s %.3f\n", strings.Join(statuses, ","), float64(time.Since(t0).Microseconds())/1000)
	}
	return 0
}

// request makes one request on a new connection to addr: its status (and
// body when 200), or "error".
func request(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "error"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(c, "GET /v1/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		return "200:" + string(b)
	}
	return strconv.Itoa(resp.StatusCode)
}

// holdRole opens n connections to addr and says "ready", then how many
// of them the relay had closed (EOF or a reset, an answer read or not)
// within AGOR_DOOR_WAIT (5 s) and the first line of the first answer,
// and holds whatever is open until stdin ends.
func holdRole(addr string, n int) int {
	in := bufio.NewReader(os.Stdin)
	if os.Getenv("AGOR_DOOR_GO") != "" { // dial once told (the test has named this process)
		if _, err := in.ReadString('\n'); err != nil {
			return 1
		}
	}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Println("dial:", err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	wait, err := time.ParseDuration(os.Getenv("AGOR_DOOR_WAIT"))
	if err != nil {
		wait = 5 * time.Second
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	closed, first, deadline := 0, "-", time.Now().Add(wait)
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(deadline)
			b, err := io.ReadAll(c)
			mu.Lock()
			defer mu.Unlock()
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				if closed++; first == "-" && len(b) > 0 {
					first, _, _ = strings.Cut(string(b), "\r\n")
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("closed", closed, first)
	_, _ = io.Copy(io.Discard, in)
	return 0
}

// churnRole connects to addr again and again, each time until the relay
// closes it, until stdin ends: it says "churning" after the first, and
// how many times at the end.
func churnRole(addr string) int {
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	n := 0
	for {
		select {
		case <-stop:
			fmt.Println(n)
			return 0
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, c)
		c.Close()
		if n++; n == 1 {
			fmt.Println("churning")
		}
	}
}

// gatewayStandIn serves the gateway's socket as far as the door goes:
// each connection's door line is taken, and each request on it answered
// 200 with the credential the line named.
func gatewayStandIn(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "door") // a Unix socket's path is short
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait(); os.RemoveAll(dir) })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { answer(c) })
		}
	})
	return sock
}

func answer(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	cred, ok := strings.CutPrefix(strings.TrimSpace(line), gatewayPrefix)
	if err != nil || !ok {
		return
	}
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(cred), cred)
	}
}

// rig is a gateway relay with its door, for the test's account.
type rig struct {
	t    *testing.T
	door *Door
	addr string
	told chan protocol.GatewayRefusedParams
	bin  string // the test binary, where other accounts may run it
}

func newRig(t *testing.T, max int) *rig {
	t.Helper()
	r := &rig{t: t, told: make(chan protocol.GatewayRefusedParams, 64)}
	r.door = &Door{UID: uint32(os.Getuid()), Max: max, Notify: func(p protocol.GatewayRefusedParams) { r.told <- p }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	sock := gatewayStandIn(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = (&egress.Relay{Socket: sock, Log: quiet, Door: r.door}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; r.door.Close() })
	return r
}

// child runs the test binary again in role, as uid when it is not nil.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (r *rig) child(role string, uid *uint32, env ...string) *child {
	r.t.Helper()
	bin := os.Args[0]
	if uid != nil {
		bin = r.shared()
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "AGOR_DOOR_ROLE="+role, "AGOR_DOOR_ADDR="+r.addr)...)
	if uid != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: *uid, Gid: *uid}}
	}
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	r.t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	return c
}

// shared is a copy of the test binary another account may run (go test
// keeps its own in a directory only root enters).
func (r *rig) shared() string {
	if r.bin != "" {
		return r.bin
	}
	dir, err := os.MkdirTemp("", "door-bin")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil || os.Chmod(dir, 0o755) != nil || os.WriteFile(filepath.Join(dir, "door.test"), self, 0o755) != nil {
		r.t.Fatalf("a copy of the test binary for another account: %v", err)
	}
	r.bin = filepath.Join(dir, "door.test")
	return r.bin
}

// line is the child's next line of output.
func (c *child) line(t *testing.T) string {
	t.Helper()
	if !c.out.Scan() {
		t.Fatalf("the child ended: %v", c.out.Err())
	}
	return c.out.Text()
}

// ask has the agent child make n requests at once: their statuses and
// the slowest one's milliseconds.
func (c *child) ask(t *testing.T, n int) ([]string, float64) {
	t.Helper()
	fmt.Fprintln(c.in, n)
	f := strings.Fields(c.line(t))
	ms, _ := strconv.ParseFloat(f[1], 64)
	return strings.Split(f[0], ","), ms
}

func needRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs a process as another account: needs root")
	}
}

var nobody = uint32(65534)

// Another account's hundreds of idle connections to her relay are each
// closed at once, unread, holding no goroutine, and told to the daemon
// summed; her agent's requests go through as before, with her task's
// credential, while that account connects again and again (latencies
// printed, not judged).
func TestOtherAccountRefusedWithoutStarving(t *testing.T) {
	needRoot(t)
	const flood, rounds = 400, 20
	r := newRig(t, 0)
	agent := r.child("agent", nil)
	turn := r.door.Open("t1", "cred-t1")
	defer turn.Close()
	turn.Started(agent.cmd.Process.Pid)
	agent.ask(t, 4) // the child's start and first dials
	alone := r.median(t, agent, rounds)
	goroutines := runtime.NumGoroutine()
	bob := r.child("hold", &nobody, "AGOR_DOOR_N="+strconv.Itoa(flood))
	if l := bob.line(t); l != "ready" {
		t.Fatalf("another account's %d connections: %s", flood, l)
	}
	if n := runtime.NumGoroutine(); n > goroutines+8 {
		t.Errorf("%d goroutines with the other account's %d connections open, %d before", n, flood, goroutines)
	}
	if l := bob.line(t); !strings.HasPrefix(l, fmt.Sprintf("closed %d HTTP/1.1 403 ", flood)) {
		t.Fatalf("of the other account's %d connections: %s, want all closed at once", flood, l)
	}
	msgs := r.waitTold(t, protocol.RefusedAnotherAccount, &nobody, flood)
	churn := r.child("churn", &nobody)
	if l := churn.line(t); l != "churning" {
		t.Fatalf("the other account's reconnecting: %s", l)
	}
	during := r.median(t, agent, rounds)
	churn.in.Close()
	tries := churn.line(t)
	t.Logf("her 4 requests at once, each on a new connection, median of %d: %.2f ms alone, %.2f ms while uid %d reconnected %s times "+
		"(after its %d idle connections, all closed at once and told in %d message(s))", rounds, alone, during, nobody, tries, flood, msgs)
}

// median is the median time of rounds of the agent's 4 requests at
// once, each of which must be served.
func (r *rig) median(t *testing.T, agent *child, rounds int) float64 {
	t.Helper()
	var ms []float64
	for range rounds {
		got, took := agent.ask(t, 4)
		if ok := "200:cred-t1"; !slices.Equal(got, []string{ok, ok, ok, ok}) {
			t.Fatalf("her agent's requests: %v", got)
		}
		ms = append(ms, took)
	}
	slices.Sort(ms)
	return ms[len(ms)/2]
}

// waitTold waits until count refusals for reason (from uid, when not nil)
// were told, and says in how many messages; one a second at most.
func (r *rig) waitTold(t *testing.T, reason string, uid *uint32, count int) int {
	t.Helper()
	sum, msgs := 0, 0
	for end := time.After(10 * time.Second); sum < count; {
		select {
		case p := <-r.told:
			if p.Reason != reason || (uid != nil && (p.UID == nil || *p.UID != *uid)) {
				continue
			}
			sum, msgs = sum+p.Count, msgs+1
		case <-end:
			t.Fatalf("%d %s refusals told, want %d", sum, reason, count)
		}
	}
	if sum != count {
		t.Fatalf("%d %s refusals told, want %d", sum, reason, count)
	}
	return msgs
}

var quiet = slog.New(slog.DiscardHandler)

// Her own processes that are no running task's (the test itself, here:
// a terminal or an exec of hers) are refused; when the task's turn ends
// its connections are closed, and its agent's next request is refused
// until a next turn opens with its own credential: a warm agent's next
// turn carries that turn's, never the last one's.
func TestOnlyTheRunningTasksProcesses(t *testing.T) {
	r := newRig(t, 0)
	agent := r.child("agent", nil)
	c, err := net.Dial("tcp", r.addr) // the test: her account, no task
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c) // the answer comes unasked, and the end
	c.Close()
	if !strings.HasPrefix(string(b), "HTTP/1.1 403 Forbidden") || !strings.Contains(string(b), "no running agent task") {
		t.Fatalf("a process of hers that is no task's: %q", b)
	}
	if got, _ := agent.ask(t, 1); got[0] != "403" {
		t.Fatalf("the agent before any turn (a pre-warmed one): %v", got)
	}
	first := r.door.Open("t1", "cred-t1")
	first.Started(agent.cmd.Process.Pid)
	if got, _ := agent.ask(t, 2); !slices.Equal(got, []string{"200:cred-t1", "200:cred-t1"}) {
		t.Fatalf("the agent in its turn: %v", got)
	}
	held := r.child("hold", nil, "AGOR_DOOR_N=2", "AGOR_DOOR_WAIT=3s", "AGOR_DOOR_GO=1")
	first.Started(held.cmd.Process.Pid) // a process of the task's, by the door's lights
	fmt.Fprintln(held.in, "go")
	if l := held.line(t); l != "ready" {
		t.Fatal(l)
	}
	waitOpen(t, first, 2) // both let in (the kernel completes a dial before the relay accepts it)
	first.Close()
	if l := held.line(t); l != "closed 2 -" {
		t.Fatalf("the task's open connections when it ended: %s, want both closed", l)
	}
	if got, _ := agent.ask(t, 1); got[0] != "403" {
		t.Fatalf("the agent after its turn: %v", got)
	}
	next := r.door.Open("t2", "cred-t2")
	defer next.Close()
	next.Started(agent.cmd.Process.Pid)
	if got, _ := agent.ask(t, 1); got[0] != "200:cred-t2" {
		t.Fatalf("the warm agent's next turn: %v", got)
	}
	r.waitTold(t, protocol.RefusedNotATask, nil, 3)
}

// A task's connections are bounded: past Max one more is answered 429,
// saying which task and bound, and told.
func TestTaskBound(t *testing.T) {
	r := newRig(t, 2)
	turn := r.door.Open("t1", "cred-t1")
	defer turn.Close()
	held := r.child("hold", nil, "AGOR_DOOR_N=3", "AGOR_DOOR_WAIT=1s", "AGOR_DOOR_GO=1")
	turn.Started(held.cmd.Process.Pid)
	fmt.Fprintln(held.in, "go")
	if l := held.line(t); l != "ready" {
		t.Fatal(l)
	}
	if l := held.line(t); l != "closed 1 HTTP/1.1 429 Too Many Requests" {
		t.Fatalf("three connections of a task bound to two: %s", l)
	}
	r.waitTold(t, protocol.RefusedTaskBound, nil, 1)
}

// waitOpen waits until turn has n connections open.
func waitOpen(t *testing.T, turn *Turn, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		turn.d.mu.Lock()
		open := len(turn.conns)
		turn.d.mu.Unlock()
		if open == n {
			return
		}
	}
	t.Fatalf("the turn never had %d connections open", n)
}
