package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/executor"
	"github.com/agor-sh/agor/internal/executor/exectest"
)

// These tests run the real binary the way systemd starts it: listening
// socket on fd 3, LISTEN_FDS=1, LISTEN_FDNAMES, and LISTEN_PID equal to
// the executor's own pid (set by a shell that then execs it, as systemd
// sets it between fork and exec). As root they run it as the tests'
// account (exectest.Account), since it refuses root.

var binary, selfCopy string

func TestMain(m *testing.M) {
	if os.Getenv("AGOR_TEST_CONNECT") != "" { // the helper child needs no binary
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agor-executor-test")
	if err != nil {
		panic(err)
	}
	_ = os.Chmod(dir, 0o755)
	binary = filepath.Join(dir, "agor-executor")
	build := exec.Command(goBinary(), "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic("build agor-executor: " + err.Error() + "\n" + string(out))
	}
	// the tests' account cannot enter go's 0700 build dir; copy before anything forks,
	// or a child could inherit the write fd and exec would fail ETXTBSY.
	selfCopy = filepath.Join(dir, "executor.test")
	if err := copyFile(os.Args[0], selfCopy); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type activated struct {
	home   string
	cmd    *exec.Cmd
	sock   string
	notify *net.UnixConn
	stderr *exectest.LockedBuffer
	exited chan error
}

// asUser is who the executor runs as: this user, or exectest.Account
// under root.
func asUser() (uid, gid int, cred *syscall.Credential) {
	if os.Geteuid() != 0 {
		return os.Getuid(), os.Getgid(), nil
	}
	u, err := user.Lookup(exectest.Account)
	if err != nil {
		panic(fmt.Sprintf("tests run as root start the executor as %q: %v (test/deps.sh creates it)", exectest.Account, err))
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func activate(t *testing.T, extraArgs ...string) *activated {
	t.Helper()
	dir, err := os.MkdirTemp("", "agor-act")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	a := &activated{sock: filepath.Join(dir, "alice.sock"), stderr: &exectest.LockedBuffer{}, exited: make(chan error, 1)}

	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: a.sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false) // like systemd: the socket outlives the service
	lnFile, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	t.Cleanup(func() { lnFile.Close() })

	notifyPath := filepath.Join(dir, "notify.sock")
	a.notify, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.notify.Close() })
	_ = os.Chmod(notifyPath, 0o777)

	_, _, cred := asUser()
	args := append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, binary,
		"--daemon-user", strconv.Itoa(os.Getuid()), "--log-level", "debug"}, extraArgs...)
	a.cmd = exec.Command("/bin/sh", args...)
	home := filepath.Join(dir, "home")
	_ = os.Mkdir(home, 0o755)
	_ = os.Chmod(home, 0o777) // the executor may run as another account
	a.home = home
	a.cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LISTEN_FDS=1", "LISTEN_FDNAMES=executor", "NOTIFY_SOCKET=" + notifyPath}
	a.cmd.ExtraFiles = []*os.File{lnFile} // fd 3
	a.cmd.Stderr = a.stderr
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.exited <- a.cmd.Wait() }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		<-a.exited
		if t.Failed() {
			t.Logf("executor stderr:\n%s", a.stderr)
		}
	})
	return a
}

// notifications reads sd_notify datagrams until one contains want.
func (a *activated) waitNotify(t *testing.T, want string) []string {
	t.Helper()
	var seen []string
	buf := make([]byte, 4096)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_ = a.notify.SetReadDeadline(deadline)
		n, err := a.notify.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %q from NOTIFY_SOCKET, saw %q: %v", want, seen, err)
		}
		seen = append(seen, string(buf[:n]))
		if strings.Contains(string(buf[:n]), want) {
			return seen
		}
	}
}

func pingOnce(t *testing.T, path string) map[string]any {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("ping reply: %v", err)
	}
	var reply struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(line, &reply); err != nil || reply.Result == nil {
		t.Fatalf("ping reply %q: %v", line, err)
	}
	return reply.Result
}

func TestActivationPingAndIdleExit(t *testing.T) {
	a := activate(t, "--idle-timeout", "300ms")
	a.waitNotify(t, "READY=1")
	res := pingOnce(t, a.sock)
	uid, _, _ := asUser()
	if res["pong"] != true || int(res["uid"].(float64)) != uid || int(res["pid"].(float64)) != a.cmd.Process.Pid {
		t.Fatalf("ping = %v; want uid %d pid %d", res, uid, a.cmd.Process.Pid)
	}
	a.waitNotify(t, "STOPPING=1")
	select {
	case err := <-a.exited:
		a.exited <- err
		if err != nil {
			t.Fatalf("executor exit after idle: %v (want status 0)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("executor did not exit by itself after the idle timeout")
	}
	if _, err := os.Stat(a.sock); err != nil {
		t.Fatalf("the inherited socket was removed: %v", err)
	}
	if !strings.Contains(a.stderr.String(), "idle, exiting") {
		t.Fatalf("no idle line in the log:\n%s", a.stderr)
	}
}

// A connection that arrives after the executor exited waits in the
// socket's backlog: a re-started executor (as systemd would start it)
// serves it. Nothing is lost across idle exit.
func TestConnectionQueuedAcrossIdleExit(t *testing.T) {
	a := activate(t, "--idle-timeout", "200ms")
	a.waitNotify(t, "STOPPING=1")
	<-a.exited
	a.exited <- nil

	c, err := net.Dial("unix", a.sock) // queued: nothing accepts now
	if err != nil {
		t.Fatalf("connect while no executor runs: %v", err)
	}
	defer c.Close()
	_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n"))

	reactivate(t, a)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil || !strings.Contains(string(line), `"pong":true`) {
		t.Fatalf("queued ping got %q, %v", line, err)
	}
}

// reactivate starts a second executor on the first one's socket.
func reactivate(t *testing.T, a *activated) *activated {
	t.Helper()
	f := a.cmd.ExtraFiles[0]
	b := &activated{sock: a.sock, stderr: &exectest.LockedBuffer{}, exited: make(chan error, 1)}
	_, _, cred := asUser()
	b.cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`, binary,
		"--daemon-user", strconv.Itoa(os.Getuid()), "--idle-timeout", "5s")
	b.cmd.Env = []string{"PATH=/usr/bin:/bin", "LISTEN_FDS=1", "LISTEN_FDNAMES=executor"}
	b.cmd.ExtraFiles = []*os.File{f}
	b.cmd.Stderr = b.stderr
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.exited <- b.cmd.Wait() }()
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); <-b.exited })
	return b
}

func TestSIGTERMStopsCleanly(t *testing.T) {
	a := activate(t, "--idle-timeout", "0")
	a.waitNotify(t, "READY=1")
	pingOnce(t, a.sock)
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	a.waitNotify(t, "STOPPING=1")
	select {
	case err := <-a.exited:
		a.exited <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

func TestWrongSocketName(t *testing.T) {
	a := activate(t, "--socket-name", "other")
	select {
	case err := <-a.exited:
		a.exited <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(a.stderr.String(), `other\" not found`) {
			t.Fatalf("exit %v, stderr:\n%s", err, a.stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("executor with a wrong socket name did not exit")
	}
}

func TestRefusesRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to show the refusal")
	}
	out, err := exec.Command(binary, "--listen", filepath.Join(t.TempDir(), "x.sock")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != executor.ExitUsage || !strings.Contains(string(out), "refusing to run as root") {
		t.Fatalf("as root: %v\n%s", err, out)
	}
}

// As root, a real second account tries to connect: the executor (running
// as nobody, serving only root) closes it and logs who it was.
func TestRefusesAnotherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	a := activate(t, "--daemon-user", "0", "--idle-timeout", "0")
	a.waitNotify(t, "READY=1")
	_ = os.Chmod(a.sock, 0o666) // let the file mode admit it: SO_PEERCRED must refuse
	// Connect from a child running as nobody, using this test binary's
	// own helper mode, and read what comes back.
	child := exec.Command(selfCopy, "-test.run=^TestHelperConnect$")
	child.Env = append(os.Environ(), "AGOR_TEST_CONNECT="+a.sock)
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reply: closed") {
		t.Fatalf("connection from uid 65534 was not closed unanswered:\n%s", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(a.stderr.String(), "refused connection") || !strings.Contains(a.stderr.String(), "peer_uid=65534") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal line naming uid 65534:\n%s", a.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHelperConnect is not a test: TestRefusesAnotherUID runs it in a
// child process under another uid.
func TestHelperConnect(t *testing.T) {
	path := os.Getenv("AGOR_TEST_CONNECT")
	if path == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	_, err = bufio.NewReader(c).ReadBytes('\n')
	os.Stdout.WriteString("reply: " + errString(err) + "\n")
}

// errString tells an unanswered close (EOF, or a reset because our ping
// was left unread) from an answer.
func errString(err error) string {
	switch {
	case err == nil:
		return "answered"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "closed"
	}
	return err.Error()
}

func TestHelp(t *testing.T) {
	out, err := exec.Command(binary, "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--idle-timeout", "default: 1m0s", "AGOR_EXECUTOR_IDLE_TIMEOUT", "EXIT STATUS", "--daemon-user"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// goBinary finds the go command that runs these tests.
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// caller connects to the activated executor and returns a function that
// sends one JSON-RPC line and returns the reply to it (notifications,
// such as exec_output, skipped). The connection closes with the test.
func (a *activated) caller(t *testing.T) func(line string) string {
	t.Helper()
	c, err := net.Dial("unix", a.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	return func(line string) string {
		t.Helper()
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(l, `"id":`) {
				return l
			}
		}
	}
}

// The primitives work through the real binary, as its user, in $HOME.
func TestPrimitivesThroughBinary(t *testing.T) {
	a := activate(t, "--idle-timeout", "0")
	a.waitNotify(t, "READY=1")
	send := a.caller(t)
	want := exectest.Account
	if os.Geteuid() != 0 {
		want = os.Getenv("USER")
	}
	out := send(`{"jsonrpc":"2.0","id":1,"method":"exec","params":{"argv":["sh","-c","id -un > who.txt"]}}`)
	if !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("exec: %s", out)
	}
	out = send(`{"jsonrpc":"2.0","id":2,"method":"read_file","params":{"path":"who.txt"}}`)
	var reply struct {
		Result struct{ Content []byte } `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil || strings.TrimSpace(string(reply.Result.Content)) != want {
		t.Fatalf("who.txt via read_file = %q (%v), want %q: %s", reply.Result.Content, err, want, out)
	}
	out = send(`{"jsonrpc":"2.0","id":3,"method":"read_file","params":{"path":"../../etc/passwd"}}`)
	if !strings.Contains(out, `"code":-32002`) {
		t.Fatalf("escape not refused: %s", out)
	}
}

// TestRefusesAccountBelowMinUID: started (as systemd would) for an account
// the configuration does not allow, the executor says why, closes the
// connection waiting for it at once, and exits 78, which the unit does
// not restart.
func TestRefusesAccountBelowMinUID(t *testing.T) {
	dir, err := os.MkdirTemp("", "agor-policy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755)
	uid, _, _ := asUser()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("execution:\n  min_uid: %d\n", uid+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := activate(t, "--config", cfg)
	c, err := net.DialTimeout("unix", a.sock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err == nil || n > 0 {
		t.Fatalf("a refused executor answered: %q %v", buf[:n], err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the waiting connection was left to time out instead of being closed")
	}
	select {
	case err := <-a.exited:
		a.exited <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 78 {
			t.Fatalf("exit %v, want status 78", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the refused executor did not exit")
	}
	if log := a.stderr.String(); !strings.Contains(log, "refusing to serve") || !strings.Contains(log, "below min_uid") {
		t.Fatalf("the log does not say why:\n%s", log)
	}
}
