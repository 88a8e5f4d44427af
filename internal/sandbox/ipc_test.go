package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// A confined task shares no kernel object with the person's other
// processes: SysV IPC and POSIX queues are its IPC namespace's, and
// /dev/pts is a devpts instance of its own (issue 48). Each test makes
// the object outside and tries it from inside the view.

// probeShared is probe's part for IPC objects and terminals.
func probeShared(verb, arg string) error {
	n, _ := strconv.Atoi(arg)
	switch verb {
	case "shmget": // a SysV segment by its key
		_, err := unix.SysvShmGet(n, 0, 0)
		return err
	case "msgget": // a SysV message queue by its key
		_, _, e := unix.Syscall(unix.SYS_MSGGET, uintptr(n), 0, 0)
		return errnoErr(e)
	case "mqopen": // a POSIX message queue by its name (no "/": the syscall's)
		fd, err := mqOpen(arg, unix.O_RDWR)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "open": // a file for reading and writing (another terminal)
		f, err := os.OpenFile(arg, os.O_RDWR|syscall.O_NOCTTY, 0)
		if err == nil {
			f.Close()
		}
		return err
	case "openpt": // a PTY of its own, used both ways
		return ownPTY()
	}
	return fmt.Errorf("unknown probe %q", verb)
}

func errnoErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// mqAttr is struct mq_attr. A queue made with one 16-byte message
// costs a few hundred bytes of the user's RLIMIT_MSGQUEUE (819200 by
// default) where the system's defaults cost 80 KiB: ten of those and
// mq_open says EMFILE.
type mqAttr struct {
	flags, maxmsg, msgsize, curmsgs int64
	_                               [4]int64
}

func mqOpen(name string, flag int) (int, error) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	attr := &mqAttr{maxmsg: 1, msgsize: 16}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flag), 0o600, uintptr(unsafe.Pointer(attr)), 0, 0)
	return int(fd), errnoErr(e)
}

// mqUnlink removes a queue by name: /dev/mqueue need not be mounted.
func mqUnlink(name string) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	return errnoErr(e)
}

// ownPTY allocates a PTY (posix_openpt, grantpt, unlockpt, open the
// slave: creack/pty), writes on the slave and reads it on the master.
func ownPTY() error {
	m, s, err := pty.Open()
	if err != nil {
		return err
	}
	defer m.Close()
	defer s.Close()
	if _, err := s.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := m.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "ping") {
		return fmt.Errorf("read %q on the master: %v", buf[:n], err)
	}
	return nil
}

// TestViewIPC: a SysV segment and message queue and a POSIX message
// queue made outside are not the task's to open, nor listed to it.
func TestViewIPC(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	key := 0x4a000000 + os.Getpid()
	shm, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(shm, unix.IPC_RMID, nil) })
	msq, _, e := unix.Syscall(unix.SYS_MSGGET, uintptr(key), unix.IPC_CREAT|0o600, 0)
	if e != 0 {
		t.Fatal(e)
	}
	t.Cleanup(func() { unix.Syscall(unix.SYS_MSGCTL, msq, unix.IPC_RMID, 0) })
	mq := "agor-sandbox-test-" + itoa(os.Getpid())
	fd, err := mqOpen(mq, unix.O_CREAT|unix.O_RDWR)
	if err != nil {
		t.Fatalf("mq_open %s outside: %v", mq, err)
	}
	unix.Close(fd)
	t.Cleanup(func() { _ = mqUnlink(mq) })
	spec := r.spec()
	for _, what := range []string{"shmget:" + itoa(key), "msgget:" + itoa(key), "mqopen:" + mq} {
		if got := confined(t, spec, what); got == "ok" {
			t.Errorf("%s: the object made outside was opened inside", what)
		}
		if off := confined(t, Spec{Level: Off}, what); off != "ok" {
			t.Errorf("off, %s: %q, want ok (the rig is wrong)", what, off)
		}
	}
	hex := fmt.Sprintf("0x%08x", key)
	out := r.sh(t, "ipcs -m -q 2>&1; ls /dev/mqueue 2>&1; echo listed")
	if strings.Contains(out, hex) || strings.Contains(out, mq) || !strings.Contains(out, "listed") {
		t.Errorf("the objects made outside are listed inside: %s", out)
	}
}

// TestViewHostTerminals: another of her terminals (a PTY opened
// outside, on the host's devpts) cannot be opened by number inside;
// a PTY of the task's own can be allocated and used.
func TestViewHostTerminals(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY outside: %v", err)
	}
	defer m.Close()
	defer s.Close()
	if got := confined(t, r.spec(), "open:"+s.Name()); got == "ok" {
		t.Errorf("the terminal %s made outside was opened inside", s.Name())
	}
	if got := confined(t, r.spec(), "openpt"); got != "ok" {
		t.Errorf("a PTY of its own: %s", got)
	}
	out := r.sh(t, "ls /dev/pts; echo listed")
	if strings.Contains(out, strings.TrimPrefix(s.Name(), "/dev/pts/")+"\n") || !strings.Contains(out, "listed") {
		t.Errorf("/dev/pts lists the host's terminals: %q", out)
	}
	if _, err := exec.LookPath("script"); err == nil {
		out := r.sh(t, "script -qec 'tty; echo via-script' /dev/null 2>&1")
		if !strings.Contains(out, "via-script") || !strings.Contains(out, "/dev/pts/") {
			t.Errorf("script(1) in the view: %q", out)
		}
	}
}

// TestViewStartedOnTerminal: a task started on one of her terminals (the
// executor's terminals, exec with a tty) keeps it: its output reaches
// the master outside, through the fds it inherited, /dev/stdout and
// /dev/tty, and it may ask the terminal's size.
func TestViewStartedOnTerminal(t *testing.T) {
	needNamespaces(t)
	r := newViewRig(t)
	m, s, err := pty.Open()
	if err != nil {
		t.Skipf("no PTY outside: %v", err)
	}
	defer m.Close()
	if err := pty.Setsize(m, &pty.Winsize{Rows: 31, Cols: 97}); err != nil {
		t.Fatal(err)
	}
	spec := r.spec()
	spec.self = os.Args[0]
	argv := spec.Command([]string{"/bin/sh", "-c",
		"echo inherited; stty size; echo via-stdout > /dev/stdout; echo via-tty > /dev/tty; echo end"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.work
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(m); got <- string(b) }() // EIO once the slave is closed
	werr := cmd.Wait()
	var out string
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the master saw no end")
	}
	for _, want := range []string{"inherited", "31 97", "via-stdout", "via-tty", "end"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q did not reach her terminal (%v): %q", want, werr, out)
		}
	}
}

// TestViewShm: POSIX shared memory is files in /dev/shm, which no IPC
// namespace covers. The view has a tmpfs of its own there: a segment of
// hers made outside is neither listed, read nor changed inside, the task
// makes its own (shm_open by Python's shared_memory, a plain file), and
// nothing of those is seen outside afterwards.
func TestViewShm(t *testing.T) {
	needNamespaces(t)
	if !dirExists(shmDir) {
		t.Skip("no /dev/shm")
	}
	r := newViewRig(t)
	hers := "agor-shm-hers-" + itoa(os.Getpid())
	mine := "agor-shm-mine-" + itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(shmDir, hers), []byte("hers"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(shmDir, hers)); _ = os.Remove(filepath.Join(shmDir, mine)) })
	out := r.sh(t, `echo "listed: $(ls /dev/shm | tr '\n' ' ')"; cat /dev/shm/`+hers+` || echo unread
		echo theirs > /dev/shm/`+hers+`; echo mine > /dev/shm/`+mine+`
		python3 -c 'from multiprocessing import shared_memory as s
m = s.SharedMemory("py-`+mine+`", create=True, size=4096); m.buf[0] = 7
n = s.SharedMemory("py-`+mine+`"); print("shm_open", n.buf[0]); n.close(); m.close(); m.unlink()'
		stat -f -c %T /dev/shm; stat -c %a /dev/shm`)
	for _, want := range []string{"unread", "shm_open 7", "tmpfs", "1777"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q inside: %s", want, out)
		}
	}
	if l, _, _ := strings.Cut(out, "\n"); strings.Contains(l, hers) {
		t.Errorf("her segment is listed inside: %s", l)
	}
	if b, err := os.ReadFile(filepath.Join(shmDir, hers)); err != nil || string(b) != "hers" {
		t.Errorf("her segment outside: %v %q", err, b)
	}
	if _, err := os.Stat(filepath.Join(shmDir, mine)); err == nil {
		t.Errorf("the task's segment is seen outside")
	}
}
