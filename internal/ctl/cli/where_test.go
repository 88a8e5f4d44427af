package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/identity"
)

// book is a user database for the tests: the accounts the fake daemons
// serve, and the test process's uid as carol.
type book map[string]identity.User

func (b book) LookupName(_ context.Context, name string) (identity.User, error) {
	if u, ok := b[name]; ok {
		return u, nil
	}
	return identity.User{}, identity.ErrNotFound
}

func (b book) LookupUID(_ context.Context, uid uint32) (identity.User, error) {
	for _, u := range b {
		if u.UID == uid {
			return u, nil
		}
	}
	return identity.User{}, identity.ErrNotFound
}

// testBook is the tests' database: alice, bob, quiet, slow and nobody,
// whom the fake daemons serve, and the caller, carol (uid carolUID), at
// home in carolHome.
func testBook(carolHome string) book {
	b := book{"carol": {Name: "carol", UID: carolUID, Home: carolHome}}
	for i, n := range []string{"alice", "bob", "quiet", "slow", "nobody"} {
		b[n] = identity.User{Name: n, UID: uint32(2001 + i), Home: "/home/" + n}
	}
	return b
}

// carolUID is the uid the tests run agorctl as (getuid).
const carolUID = 1003

// useBook makes b the accounts agorctl sees, for the rest of the test
// (the package's tests run one at a time).
func useBook(t *testing.T, b book) {
	old := accounts
	accounts = func() accountBook { return b }
	t.Cleanup(func() { accounts = old })
}

// homes makes carol's and alice's homes, each with src/app, beside a
// directory outside both, and makes them the homes agorctl sees.
func homes(t *testing.T) (carol, alice, outside string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	carol, alice, outside = filepath.Join(dir, "carol"), filepath.Join(dir, "alice"), filepath.Join(dir, "tmp")
	for _, d := range []string{filepath.Join(carol, "src/app"), filepath.Join(alice, "src/app"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := testBook(carol)
	b["alice"] = identity.User{Name: "alice", UID: 2001, Home: alice}
	useBook(t, b)
	return carol, alice, outside
}

// The operands: USER when --user names it, or when the first of enough
// operands names an account; the caller otherwise.
func TestUserOperand(t *testing.T) {
	for _, c := range []struct {
		flag  string
		args  []string
		min   int
		user  string
		named bool
		rest  []string
	}{
		{"", []string{"fix it"}, 2, "carol", false, []string{"fix it"}},
		{"", []string{"fix", "the", "test"}, 2, "carol", false, []string{"fix", "the", "test"}},
		{"", []string{"alice", "fix it"}, 2, "alice", true, []string{"fix it"}},
		{"", []string{"alice"}, 2, "carol", false, []string{"alice"}}, // one operand: the prompt "alice"
		{"", []string{"alice"}, 1, "alice", true, []string{}},         // with --file: USER
		{"bob", []string{"alice", "fix it"}, 2, "bob", true, []string{"alice", "fix it"}},
	} {
		w, rest, err := userOperand(context.Background(), c.flag, c.args, c.min)
		if err != nil || w.name != c.user || w.named != c.named || !slices.Equal(rest, c.rest) {
			t.Errorf("-u %q %q: %+v %q %v, want %s named=%v %q", c.flag, c.args, w, rest, err, c.user, c.named, c.rest)
		}
	}
}

// unanswered is a user database that knows carol only, and does not
// answer for anyone else.
type unanswered struct{ book }

func (u unanswered) LookupName(ctx context.Context, name string) (identity.User, error) {
	if name == "carol" {
		return u.book.LookupName(ctx, name)
	}
	return identity.User{}, identity.ErrUnavailable
}

// A database that does not answer: a word no account can have is the
// prompt's without asking; a name it cannot tell is a usage error.
func TestUserOperandUnanswered(t *testing.T) {
	useBook(t, book{})
	accounts = func() accountBook { return unanswered{testBook("/home/carol")} }
	w, rest, err := userOperand(context.Background(), "", []string{"fix the bug", "now"}, 2)
	if err != nil || w.name != "carol" || len(rest) != 2 {
		t.Errorf("a prompt's words: %+v %q %v", w, rest, err)
	}
	if _, _, err := userOperand(context.Background(), "", []string{"ghost", "fix it"}, 2); err == nil || !strings.Contains(err.Error(), "name the person with --user") {
		t.Errorf("an unanswered name: %v", err)
	}
}

// Where work runs: the shell's directory in the home, --cwd from where
// the shell is (or from the home, outside it), ~ and absolute paths;
// refusals say what to type.
func TestWorkDir(t *testing.T) {
	carol, alice, outside := homes(t)
	link := filepath.Join(outside, "link")
	if err := os.Symlink(filepath.Join(carol, "src"), link); err != nil {
		t.Fatal(err)
	}
	me, her := whom{name: "carol", uid: carolUID}, whom{name: "alice", named: true}
	for _, c := range []struct {
		w         whom
		here, cwd string
		want      string // or the refusal's words
		fromShell bool
	}{
		{me, carol + "/src/app", "", "src/app", true},
		{me, carol, "", ".", true},
		{me, link, "", "src", true},
		{me, carol + "/src/app", ".", "src/app", false},
		{me, carol + "/src", "app", "src/app", false},
		{me, outside, "src/app", "src/app", false},
		{me, outside, carol + "/src/app", "src/app", false},
		{me, outside, "~/src/app", "src/app", false},
		{me, outside, "", "refused: the working directory " + outside + " is not in carol's home (" + carol + "): cd into a project there, or pass --cwd ~/src/app", false},
		{me, carol, "/etc", "refused: --cwd /etc is /etc, which is not in carol's home", false},
		{me, carol + "/src", "../..", "refused: not in carol's home", false},
		{her, outside, "", ".", false},
		{her, alice + "/src/app", "", "src/app", true},
		{her, outside, "~alice/src", "src", false},
		{her, outside, "~/src", "src", false},
		{her, carol, "~/src", "src", false}, // ~ is alice's: the shell would have said carol's path, as next
		{her, carol, carol + "/src", "refused: " + carol + "/src, which is not in alice's home", false},
	} {
		t.Chdir(c.here)
		rel, fromShell, err := workDir(context.Background(), c.w, c.cwd)
		if words, refused := strings.CutPrefix(c.want, "refused: "); refused {
			if err == nil || !strings.Contains(err.Error(), words) {
				t.Errorf("%s in %s, --cwd %q: %q, %v; want a refusal saying %q", c.w.name, c.here, c.cwd, rel, err, words)
			}
			continue
		}
		if err != nil || rel != c.want || fromShell != c.fromShell {
			t.Errorf("%s in %s, --cwd %q: %q (from the shell: %v), %v; want %q (%v)", c.w.name, c.here, c.cwd, rel, fromShell, err, c.want, c.fromShell)
		}
	}
}

// recorder is a daemon that answers prompt, exec and terminal requests
// at once and keeps what each one was (method, path and body).
func recorder(t *testing.T) (string, *[]string) {
	var seen []string
	sock := filepath.Join(t.TempDir(), "api.sock")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(b)))
		switch {
		case strings.HasSuffix(r.URL.Path, "/prompt"):
			fmt.Fprintln(w, `{"task_id":"t1","session_id":"s1"}`)
			fmt.Fprintln(w, `{"result":{"status":"completed"}}`)
		case strings.HasSuffix(r.URL.Path, "/exec"):
			fmt.Fprintln(w, `{"exit_code":0}`)
		default:
			fmt.Fprintln(w, `{}`)
		}
	})}
	ln := listenUnix(t, sock)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock, &seen
}

// A person at her shell: agorctl prompt 'fix it' in ~/src/app runs there
// as her; the older form names the account and keeps its home default;
// from outside her home she is told what to type, and nothing is sent.
func TestPromptWhereSheStands(t *testing.T) {
	carol, _, outside := homes(t)
	sock, seen := recorder(t)
	for _, c := range []struct {
		here string
		args []string
		want string
	}{
		{carol + "/src/app", []string{"prompt", "fix it"}, `POST /v1/executors/carol/prompt {"session_id":"","agentic_tool":"claude-code","prompt":"fix it","cwd":"src/app"`},
		{carol + "/src/app", []string{"prompt", "fix", "the", "test"}, `"prompt":"fix the test","cwd":"src/app"`},
		{carol + "/src/app", []string{"prompt", "--cwd", ".", "fix it"}, `"cwd":"src/app"`},
		{carol + "/src", []string{"prompt", "--cwd", "app", "fix it"}, `"cwd":"src/app"`},
		{outside, []string{"prompt", "alice", "fix it"}, `POST /v1/executors/alice/prompt {"session_id":"","agentic_tool":"claude-code","prompt":"fix it","cwd":"."`},
		{outside, []string{"prompt", "-u", "alice", "--cwd", "~alice/src/app", "fix it"}, `POST /v1/executors/alice/prompt {"session_id":"","agentic_tool":"claude-code","prompt":"fix it","cwd":"src/app"`},
		{carol + "/src", []string{"exec", "--", "id", "-un"}, `POST /v1/executors/carol/exec {"argv":["id","-un"],"cwd":"src"`},
		{carol, []string{"exec", "alice", "--", "id"}, `POST /v1/executors/alice/exec {"argv":["id"],"cwd":"."`},
	} {
		t.Chdir(c.here)
		*seen = nil
		r := agorctl(context.Background(), closedStdin{t}, append([]string{c.args[0], "--api", sock}, c.args[1:]...)...)
		if r.code != 0 || len(*seen) != 1 || !strings.Contains((*seen)[0], c.want) {
			t.Errorf("%v in %s: exit %d, stderr %q; the daemon saw %q, want %q", c.args, c.here, r.code, r.stderr, *seen, c.want)
		}
	}
	t.Chdir(outside)
	*seen = nil
	r := agorctl(context.Background(), closedStdin{t}, "prompt", "--api", sock, "fix it")
	if r.code != exitUsage || !strings.Contains(r.stderr, "is not in carol's home") || !strings.Contains(r.stderr, "pass --cwd ~/src/app") || len(*seen) != 0 {
		t.Errorf("from outside her home: exit %d, stderr %q, the daemon saw %q", r.code, r.stderr, *seen)
	}
}
