package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// probeEnv makes the test binary, run confined, try one way out and say
// how it went on stdout: "ok" or the error.
const probeEnv = "AGOR_SANDBOX_PROBE"

func probe(what string) int {
	verb, arg, _ := strings.Cut(what, ":")
	var err error
	switch verb {
	case "dial": // a Unix socket by path, or "@name" (abstract)
		var c net.Conn
		if c, err = net.Dial("unix", arg); err == nil {
			c.Close()
		}
	case "socketpair":
		var fds [2]int
		if fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0); err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	case "sendto": // a datagram to a Unix socket by its address, from a socketpair
		var fds [2]int
		if fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
			err = unix.Sendto(fds[0], []byte("x"), 0, &unix.SockaddrUnix{Name: arg})
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
	case "chmod": // MODE:PATH
		mode, path, _ := strings.Cut(arg, ":")
		m, _ := strconv.ParseUint(mode, 8, 32)
		err = os.Chmod(path, os.FileMode(m))
	case "kill": // signal 0 to a process outside
		pid, _ := strconv.Atoi(arg)
		err = unix.Kill(pid, syscall.SIGCONT)
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o600)
	default:
		err = probeShared(verb, arg)
	}
	if err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("ok")
	}
	return 0
}

// confined runs the probe what under spec (the launcher, then this
// binary) and returns what it said.
func confined(t *testing.T, spec Spec, what string) string {
	t.Helper()
	spec.self = os.Args[0]
	argv := spec.Command([]string{os.Args[0]})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), probeEnv+"="+what)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe %s: %v %s", what, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestEscapes tries the ways out of a confined process that Landlock's
// file rules alone left open (a confined task asked someone outside to
// act for it, chmod'ed ~/.bashrc world-writable, signalled another of the
// user's processes, wrote into the host-wide /dev/shm): each is refused
// under workspace, and each works under off.
func TestEscapes(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	work := filepath.Join(home, "proj")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(home, "daemon.sock")
	abstract := fmt.Sprintf("@agor-sandbox-test-%d", os.Getpid())
	for _, addr := range []string{sock, abstract} {
		ln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
				c.Close()
			}
		}()
	}
	dgram := filepath.Join(home, "journal.sock") // a datagram socket outside, like journald's
	dconn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: dgram, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dconn.Close() })
	bashrc := filepath.Join(work, "rc") // inside the workspace: writable, but not world-writable
	if err := os.WriteFile(bashrc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := exec.Command("sleep", "30")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Process.Kill(); _ = outside.Wait() })

	ws := Spec{Level: Workspace, Cwd: work}
	for _, c := range []struct{ what, refusedAs string }{
		{"dial:" + sock, "operation not permitted"},     // the filter: socket(AF_UNIX)
		{"dial:" + abstract, "operation not permitted"}, // the filter first; Landlock's scope too
		{"chmod:666:" + bashrc, "operation not permitted"},
		{"chmod:640:" + bashrc, ""}, // no group or other write bit: fine
		{"socketpair", ""},
		{"sendto:" + dgram, "operation not permitted"},                           // the filter: a datagram pair
		{"kill:" + strconv.Itoa(outside.Process.Pid), "operation not permitted"}, // Landlock's signal scope
		{"write:/dev/shm/agor-sandbox-test", "permission denied"},                // the host's; a view has its own (TestViewShm)
		{"write:/dev/null", ""},
	} {
		got := confined(t, ws, c.what)
		want := c.refusedAs
		if want == "" {
			want = "ok"
		}
		if !strings.Contains(got, want) {
			t.Errorf("workspace, %s: %q, want %q", c.what, got, want)
		}
		if off := confined(t, Spec{Level: Off}, c.what); off != "ok" {
			t.Errorf("off, %s: %q, want ok", c.what, off)
		}
	}
	_ = os.Remove("/dev/shm/agor-sandbox-test")
}

// TestUnixSocketsException: the operator's sandbox.unix_sockets lets
// confined work reach a Unix socket.
func TestUnixSocketsException(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	sock := filepath.Join(home, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for c, err := ln.Accept(); err == nil; c, err = ln.Accept() {
			c.Close()
		}
	}()
	if got := confined(t, Spec{Level: Workspace, Cwd: home, UnixSockets: true}, "dial:"+sock); got != "ok" {
		t.Fatalf("with the exception: %q", got)
	}
}

func TestFilterAssembles(t *testing.T) {
	for _, unixSockets := range []bool{false, true} {
		p := filter(rules{unixSockets: unixSockets, refusedWrite: refusedWriteBits(0o022), gid: 1000})
		if len(p) == 0 || len(p) > 255 || p[len(p)-1].K != allow {
			t.Fatalf("filter(%v): %d instructions, last %+v", unixSockets, len(p), p[len(p)-1])
		}
	}
}

// TestConfined: a process the launcher confined is told from one started
// plainly, by its filters and its descent from the executor (here, this
// test process).
func TestConfined(t *testing.T) {
	needLandlock(t)
	home := t.TempDir()
	spec := Spec{Level: Workspace, Cwd: home, self: os.Args[0]}
	argv := spec.Command([]string{"sleep", "30"})
	boxed := exec.Command(argv[0], argv[1:]...)
	plain := exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{boxed, plain} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	self := os.Getpid()
	for i := 0; i < 100 && !Confined(boxed.Process.Pid, self); i++ { // the launcher installs its filter, then execs
		time.Sleep(20 * time.Millisecond)
	}
	if !Confined(boxed.Process.Pid, self) {
		t.Error("the confined sleep is not seen as confined")
	}
	if Confined(plain.Process.Pid, self) || Confined(self, self) {
		t.Error("an unconfined process is seen as confined")
	}
	if Confined(boxed.Process.Pid, plain.Process.Pid) {
		t.Error("confined by an executor it does not descend from")
	}
}

// TestChmodFollowsUmask: under umask 002 (a person's own group) a
// confined chmod may add the group's write bit, as creating the file
// would; never the others'. Under 022 neither.
func TestChmodFollowsUmask(t *testing.T) {
	needLandlock(t)
	work := t.TempDir()
	f := filepath.Join(work, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ws := Spec{Level: Workspace, Cwd: work}
	for _, c := range []struct {
		umask     int
		mode, got string
	}{
		{0o002, "664", "ok"}, {0o002, "666", "operation not permitted"},
		{0o022, "664", "operation not permitted"}, {0o022, "644", "ok"},
	} {
		old := syscall.Umask(c.umask)
		got := confined(t, ws, "chmod:"+c.mode+":"+f)
		syscall.Umask(old)
		if !strings.Contains(got, c.got) {
			t.Errorf("umask %03o, chmod %s: %q, want %q", c.umask, c.mode, got, c.got)
		}
	}
}
