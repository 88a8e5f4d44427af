package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// orphansDaemon answers the orphans routes and records the purge asked.
func orphansDaemon(t *testing.T) (string, chan string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "daemon.sock")
	ln := listenUnix(t, sock)
	purged := make(chan string, 4)
	now := uint32(2000)
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/accounts/orphans", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(apiwire.OrphanList{Orphans: []apiwire.Orphan{
			{Name: "alice", UID: 1000, CurrentUID: &now, Sessions: 2, Tasks: 3, Events: 40, Credentials: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}},
			{Name: "gone", UID: -1, Sessions: 1, Tasks: 1},
		}})
	})
	m.HandleFunc("DELETE /v1/accounts/orphans/{name}", func(w http.ResponseWriter, r *http.Request) {
		purged <- r.PathValue("name") + " " + r.URL.Query().Get("uid")
		_ = json.NewEncoder(w).Encode(apiwire.Orphan{Name: r.PathValue("name"), UID: -1, Sessions: 1, Tasks: 1, Events: 5})
	})
	srv := &http.Server{Handler: m}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock, purged
}

func TestAccountsOrphans(t *testing.T) {
	sock, _ := orphansDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "accounts", "orphans", "--api", sock)
	want := `USER   UID   NOW   SESSIONS  TASKS  EVENTS  CREDENTIALS
alice  1000  2000  2         3      40      ANTHROPIC_API_KEY,OPENAI_API_KEY
gone   -1    -     1         1      0       -
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	r = agorctl(context.Background(), closedStdin{t}, "accounts", "orphans", "--json", "--api", sock)
	var l apiwire.OrphanList
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &l) != nil || len(l.Orphans) != 2 {
		t.Fatalf("--json: exit %d: %q", r.code, r.stdout)
	}
}

func TestAccountsPurge(t *testing.T) {
	sock, purged := orphansDaemon(t)
	r := agorctl(context.Background(), closedStdin{t}, "accounts", "purge", "gone", "--uid", "-1", "--api", sock)
	if r.code != 0 || r.stdout != "purged gone uid -1: 1 sessions, 1 tasks, 5 events, credentials -\n" {
		t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
	if got := <-purged; got != "gone -1" {
		t.Fatalf("daemon asked to purge %q", got)
	}
	for _, args := range [][]string{
		{"accounts", "purge", "alice"},                  // no --uid
		{"accounts", "purge", "--uid", "1000"},          // no USER
		{"accounts", "purge", "a/b", "--uid", "1000"},   // not a user name
		{"accounts", "purge", "alice", "--uid", "many"}, // not a number
	} {
		r := agorctl(context.Background(), closedStdin{t}, append(args, "--api", sock)...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.code, exitUsage, r.stderr)
		}
	}
	select {
	case got := <-purged:
		t.Fatalf("a usage error reached the daemon: %q", got)
	default:
	}
}
