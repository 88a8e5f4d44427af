package executorunit

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// A daemon started from a terminal (make run, as root) must not give its
// executors that terminal: with it as their controlling tty, a user's
// exec could push keystrokes into root's shell (TIOCSTI). The test runs
// itself again in a session of its own whose controlling terminal is a
// fresh PTY, and there checks the executor's session and terminal.
func TestDirectNoControllingTTY(t *testing.T) {
	if os.Getenv("AGOR_TEST_CTTY") == "" {
		runInTTY(t, "^TestDirectNoControllingTTY$")
		return
	}
	own := sessionOf(t, os.Getpid())
	if own.tty == 0 {
		t.Fatal("the helper has no controlling terminal to leak")
	}
	name, _ := target(t)
	d, _ := direct(t, 0)
	ex, err := d.Ensure(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	st := sessionOf(t, ping(t, ex.Socket).PID)
	if st.session == own.session {
		t.Errorf("executor in the daemon's session %d", st.session)
	}
	if st.tty != 0 {
		t.Errorf("executor has the daemon's terminal (tty_nr %#x) as its controlling tty", st.tty)
	}
}

// runInTTY runs the test binary's test named by pattern as the leader of
// a new session whose controlling terminal is a PTY, and fails with its
// output if it fails.
func runInTTY(t *testing.T, pattern string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "AGOR_TEST_CTTY=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { defer close(copied); _, _ = io.Copy(&out, ptmx) }() // ends with EIO when the terminal's last holder goes
	err = cmd.Wait()
	<-copied
	if err != nil || !strings.Contains(out.String(), "--- PASS") {
		t.Fatalf("in a terminal: %v\n%s", err, out.String())
	}
}

type session struct{ session, tty int }

// sessionOf reads a process's session and controlling terminal from
// /proc/PID/stat (fields 6 and 7).
func sessionOf(t *testing.T, pid int) session {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	sid, _ := strconv.Atoi(f[3])
	tty, _ := strconv.Atoi(f[4])
	return session{session: sid, tty: tty}
}
