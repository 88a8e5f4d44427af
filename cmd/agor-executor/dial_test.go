package main

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/dialback/dialbacktest"
	"github.com/agor-sh/agor/internal/executor/exectest"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// dialDaemon is the daemon's side of the dial-back on loopback: every
// proved connection comes out of the channel.
func dialDaemon(t *testing.T, jobs *dialback.Jobs) (addr, caFile string, got chan dialback.Accepted) {
	t.Helper()
	p := dialbacktest.New(t)
	dir, err := os.MkdirTemp("", "agor-dial-ca")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755) // the executor may run as another account
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, p.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got = make(chan dialback.Accepted, 4)
	s := &dialback.Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}}, Deliver: func(a dialback.Accepted) { got <- a }}
	go s.Serve(ctx, ln)
	return ln.Addr().String(), caFile, got
}

// runDial starts the real binary with --dial, the token on its stdin.
func runDial(t *testing.T, addr, caFile, token string) (*exec.Cmd, *exectest.LockedBuffer, chan error) {
	t.Helper()
	_, _, cred := asUser()
	home, err := os.MkdirTemp("", "agor-dial")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	_ = os.Chmod(home, 0o777) // the executor may run as another account
	cmd := exec.Command(binary, "--dial", addr, "--dial-ca", caFile, "--job-id", "77", "--idle-timeout", "0",
		"--config", filepath.Join(home, "none.yaml"), "--log-level", "debug")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	cmd.Stdin = strings.NewReader(token + "\n")
	stderr := &exectest.LockedBuffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("executor stderr:\n%s", stderr)
		}
	})
	return cmd, stderr, exited
}

// The executor of a job dials the daemon, serves it as it serves a socket
// connection, dials again when the link drops (a restarted daemon), and
// ends on shutdown.
func TestDialBackServes(t *testing.T) {
	uid, _, _ := asUser()
	jobs, _ := dialback.OpenJobs("")
	me := currentUserOf(t, uid)
	token, _ := jobs.Issue(me, uint32(uid))
	addr, caFile, got := dialDaemon(t, jobs)
	_, _, exited := runDial(t, addr, caFile, token)

	ping := func(a dialback.Accepted) *rpc.Client {
		c := rpc.NewClient(a.Conn, nil, rpc.Options{})
		var res protocol.PingResult
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Call(ctx, protocol.MethodPing, nil, &res); err != nil || !res.Pong || res.UID != uid {
			t.Fatalf("ping over the dial-back: %+v %v", res, err)
		}
		return c
	}
	first := waitAccepted(t, got, exited)
	if first.Job.JobID != "77" || first.Job.User != me {
		t.Errorf("job %+v", first.Job)
	}
	c := ping(first)
	c.Close() // the daemon went away
	jobs.Release(first.Job)
	c = ping(waitAccepted(t, got, exited))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var res protocol.ShutdownResult
	if err := c.Call(ctx, protocol.MethodShutdown, protocol.ShutdownParams{Reason: "idle", TimeoutMS: 1000}, &res); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running after shutdown")
	}
}

// A token the daemon does not know ends the executor: nothing to serve.
func TestDialBackRefused(t *testing.T) {
	jobs, _ := dialback.OpenJobs("")
	addr, caFile, _ := dialDaemon(t, jobs)
	_, stderr, exited := runDial(t, addr, caFile, strings.Repeat("x", 43))
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(stderr.String(), "refused") {
			t.Fatalf("exit %v, stderr:\n%s", err, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a refused executor kept running")
	}
}

func waitAccepted(t *testing.T, got chan dialback.Accepted, exited chan error) dialback.Accepted {
	t.Helper()
	select {
	case a := <-got:
		return a
	case err := <-exited:
		t.Fatalf("executor exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no dial-back")
	}
	return dialback.Accepted{}
}

func currentUserOf(t *testing.T, uid int) string {
	out, err := exec.Command("id", "-un", strconv.Itoa(uid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
