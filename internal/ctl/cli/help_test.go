package cli

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// commandPaths lists every command below root, hidden ones too, as the
// words that name it (cobra's own __complete commands aside).
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, s := range c.Commands() {
		if strings.HasPrefix(s.Name(), "__") {
			continue
		}
		p := append(append([]string(nil), prefix...), s.Name())
		out = append(out, p)
		out = append(out, commandPaths(s, p)...)
	}
	return out
}

// trap is a Unix socket that counts the connections made to it.
func trap(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return &n
}

// isolate points HOME, the API socket, and the system bus at a temporary
// directory, the sockets at traps; it returns the count of connections.
func isolate(t *testing.T) func() int64 {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	api := trap(t, filepath.Join(dir, "daemon.sock"))
	bus := trap(t, filepath.Join(dir, "bus"))
	t.Setenv("AGOR_SOCKET", filepath.Join(dir, "daemon.sock"))
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "bus"))
	return func() int64 { return api.Load() + bus.Load() }
}

// Every command and subcommand, hidden ones too, with --help or -h (also
// after an operand, as in "creds delete NAME --help", and as "help
// COMMAND"): exit 0, its help on stdout, nothing on stderr, no socket
// touched, standard input not read.
func TestHelpNeverActs(t *testing.T) {
	connections := isolate(t)
	paths := commandPaths(newRoot(&app{}), nil)
	if len(paths) < 30 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range append(paths, nil) {
		for _, args := range [][]string{
			append(append([]string(nil), p...), "--help"),
			append(append([]string(nil), p...), "-h"),
			append(append([]string(nil), p...), "NAME", "--help"),
			append([]string{"help"}, p...),
		} {
			r := agorctl(context.Background(), closedStdin{t}, args...)
			want := "agorctl " + strings.Join(p, " ")
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:\n  "+strings.TrimSpace(want)) || r.stderr != "" {
				t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, r.code, r.stderr, r.stdout)
			}
			if !strings.Contains(r.stdout, "Exit status:") {
				t.Errorf("%q: no exit status in the help", args)
			}
		}
	}
	if n := connections(); n != 0 {
		t.Fatalf("%d connections to the daemon's or the bus's socket", n)
	}
}

// Every visible command has a short and a long help and examples.
func TestHelpComplete(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.Hidden || strings.HasPrefix(s.Name(), "__") {
				continue
			}
			if s.Short == "" || s.Long == "" || s.Example == "" {
				t.Errorf("%s: short %q, long %d bytes, example %q", s.CommandPath(), s.Short, len(s.Long), s.Example)
			}
			walk(s)
		}
	}
	walk(newRoot(&app{}))
}

// agorctl as a process, for the commands that once acted on --help or
// read standard input (issue 19), its standard input a pipe that stays
// open: a command that read it would hang until the test's deadline.
func TestHelpProcess(t *testing.T) {
	connections := isolate(t)
	cmds := [][]string{
		{"permissions", "approve", "perm_1", "--help"}, {"creds", "delete", "NAME", "--help"},
		{"creds", "set", "NAME", "--help"}, {"creds", "--help"}, {"api-token", "--help"},
		{"api-token", "new", "--help"}, {"completion", "--help"}, {"executors", "ensure", "alice", "-h"},
		{"prompt", "alice", "hi", "-h"}, {"terminal", "--help"}, {"exec", "alice", "id", "--help"},
	}
	var wg sync.WaitGroup
	for _, args := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(os.Environ(), "AGORCTL_RUN_MAIN=1")
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Error(err)
				return
			}
			defer pw.Close()
			cmd.Stdin = pr
			out, err := cmd.Output()
			pr.Close()
			if err != nil || !strings.Contains(string(out), "Usage:") {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
		}()
	}
	wg.Wait()
	if n := connections(); n != 0 {
		t.Fatalf("%d connections to the daemon's or the bus's socket", n)
	}
}

// The traps catch what they are for: a command that does act connects.
func TestTrapBites(t *testing.T) {
	connections := isolate(t)
	if r := agorctl(context.Background(), closedStdin{t}, "sessions"); r.code == 0 {
		t.Fatalf("sessions against a trap: exit 0")
	}
	if n := connections(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}
