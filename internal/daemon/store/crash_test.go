package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashEnv names the database a child process of TestCrash writes to.
const crashEnv = "AGOR_STORE_CRASH_DB"

// crashChild is the child of TestCrash when crashEnv is set: it opens the
// database, creates a running task and appends its events until killed,
// printing each sequence once Append has returned (committed). It reports
// whether it ran, so TestMain skips the tests.
func crashChild() bool {
	path := os.Getenv(crashEnv)
	if path == "" {
		return false
	}
	if err := runCrashChild(path, os.Getenv("AGOR_STORE_CRASH_BATCH") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	os.Exit(0)
	return true
}

func runCrashChild(path string, batch bool) error {
	db, err := Open(path)
	if err != nil {
		return err
	}
	if _, err := db.CreateSession(Session{ID: "s1", UnixUser: "alice", AgenticTool: "claude-code"}); err != nil {
		return err
	}
	if _, err := db.CreateTask(Task{ID: "t1", SessionID: "s1", UnixUser: "alice", Status: Running}); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for q := int64(0); q < 10_000_000; {
		if batch {
			if _, err := db.AppendBatch(evs("t1", q, q+7)); err != nil {
				return err
			}
			q += 8
		} else {
			if err := db.Append(ev("t1", q)); err != nil {
				return err
			}
			q++
		}
		fmt.Fprintln(out, q-1) // committed up to q-1
		out.Flush()
	}
	return db.Close()
}

// TestCrash SIGKILLs a process appending events and checks that the
// database is intact, holds every event the process saw committed, each
// once, and that MarkInterrupted ends the task the process was running.
func TestCrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		batch  bool
		killAt int64 // kill once this sequence is committed
	}{
		{"early", false, 3},
		{"unbatched", false, 500},
		{"later", false, 3000},
		{"batched", true, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agor.db")
			committed := killChild(t, path, tc.batch, tc.killAt)
			if committed < tc.killAt {
				t.Fatalf("child committed up to %d, killed at %d", committed, tc.killAt)
			}
			db := openTest(t, path)
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
			got, err := db.Events("t1", -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Events past the last reported may be there (committed, killed
			// before printing); every reported one must be, each once.
			if int64(len(got)) < committed+1 {
				t.Errorf("%d events stored, child reported %d committed", len(got), committed+1)
			}
			for i, e := range got {
				if e.Sequence != int64(i) {
					t.Fatalf("event %d has sequence %d: lost or duplicated", i, e.Sequence)
				}
			}
			if n, err := db.MarkInterrupted(); err != nil || n != 1 {
				t.Errorf("MarkInterrupted = %d, %v; want 1", n, err)
			}
			if tk, _ := db.GetTask("t1"); tk.Status != Interrupted {
				t.Errorf("task status %s, want interrupted", tk.Status)
			}
			t.Logf("killed after %d committed events; %d stored", committed+1, len(got))
		})
	}
}

// killChild starts the crash child on path, SIGKILLs it once it reports
// killAt committed, and returns the last sequence it reported.
func killChild(t *testing.T, path string, batch bool, killAt int64) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	if batch {
		cmd.Env = append(cmd.Env, "AGOR_STORE_CRASH_BATCH=1")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	last := int64(-1)
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() { // after the kill, read what the pipe still holds
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		last = n
		if n >= killAt && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\n%s", err, stderr.String())
	}
	return last
}
