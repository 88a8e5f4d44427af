package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agor-sh/agor/internal/executor/umask"
)

// loginDefs is the file the executor reads the login settings from.
const loginDefs = "/etc/login.defs"

// TestLoginUmask: what the executor starts gets its user's login umask
// (GECOS, /etc/login.defs, user private groups), not the umask the
// executor was started with (the unit's UMask=, here 077). Not parallel:
// it sets the process's umask for the child to inherit.
func TestLoginUmask(t *testing.T) {
	uid, _, _ := asUser()
	acct, err := umask.Getent(context.Background(), "getent", uint32(uid))
	if err != nil {
		t.Skip(err)
	}
	defs, _ := os.ReadFile(loginDefs)
	want, source := umask.Login(acct, defs)
	if want == 0o077 {
		t.Skipf("the login umask here is 077 (%s): it cannot be told from the unit's", source)
	}
	old := syscall.Umask(0o077)
	a := activate(t, "--idle-timeout", "0")
	syscall.Umask(old)
	a.waitNotify(t, "READY=1")
	send := a.caller(t)
	if out := send(`{"jsonrpc":"2.0","id":1,"method":"exec","params":{"argv":["sh","-c","umask > umask.txt"]}}`); !strings.Contains(out, `"exit_code":0`) {
		t.Fatalf("exec: %s", out)
	}
	out := send(`{"jsonrpc":"2.0","id":2,"method":"read_file","params":{"path":"umask.txt"}}`)
	var reply struct {
		Result struct{ Content []byte } `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(reply.Result.Content)); got != fmt.Sprintf("%04o", want) {
		t.Fatalf("a command's umask is %s, want the login umask %04o (%s)", got, want, source)
	}
	if !strings.Contains(a.stderr.String(), "umask "+fmt.Sprintf("%#o", want)) {
		t.Errorf("no log line naming the umask:\n%s", a.stderr)
	}
}
