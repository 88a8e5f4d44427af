// Package exectest helps tests that run the real agor-executor binary:
// it builds it once per test binary and says whom it runs as.
package exectest

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Main builds agor-executor (from the repository's cmd/agor-executor,
// found relative to the package under test) into a temporary directory
// every user can enter, runs the tests with its path, and cleans up. Call
// it from TestMain.
func Main(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "agor-exectest")
	if err != nil {
		panic(err)
	}
	_ = os.Chmod(dir, 0o755) // an executor may run as another account
	*binary = filepath.Join(dir, "agor-executor")
	build := exec.Command("go", "build", "-o", *binary, "github.com/agor-sh/agor/cmd/agor-executor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic("build agor-executor: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Account is the account executors run as when tests run as root
// (executors refuse root, and nobody like every special account).
// test/deps.sh creates it: a regular uid, no home, no login, locked.
const Account = "agortest"

// Target is the user an executor runs as in tests: Account under root,
// else the current user.
func Target(t testing.TB) (name string, uid int) {
	if os.Geteuid() == 0 {
		u, err := user.Lookup(Account)
		if err != nil {
			t.Fatalf("tests run as root start executors as %q: %v (test/deps.sh, run by make test, creates it)", Account, err)
		}
		uid, err := strconv.Atoi(u.Uid)
		if err != nil {
			t.Fatal(err)
		}
		return Account, uid
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username, os.Getuid()
}

// LockedBuffer collects output written from other goroutines (a child's
// stderr, a daemon's log) while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
