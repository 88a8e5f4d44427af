package watch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc/rpctest"

	"go.uber.org/goleak"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	root   string
	client *rpc.Conn
	server *rpc.Conn
	svc    *Service
	mu     sync.Mutex
	events []protocol.FileEvent
}

func setup(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "proj", "sub"), 0o755))
	r, err := fsroot.Open(root)
	must(t, err)
	e := &env{root: root, svc: &Service{Root: r, MaxPerConn: 3, Coalesce: 20 * time.Millisecond}}
	smux := rpc.NewMux()
	e.svc.Register(smux)
	cmux := rpc.NewMux()
	cmux.Register(protocol.MethodFileEvent, func(_ context.Context, req *rpc.Request) (any, error) {
		var ev protocol.FileEvent
		_ = json.Unmarshal(req.Params, &ev)
		e.mu.Lock()
		e.events = append(e.events, ev)
		e.mu.Unlock()
		return nil, nil
	})
	t.Cleanup(func() { // after the pair's end
		e.svc.Close()
		e.svc.Wait()
		r.Close()
	})
	e.server, e.client = rpctest.Pair(t, smux, cmux, rpc.Options{}, rpc.Options{})
	return e
}

func (e *env) watch(t *testing.T, p protocol.WatchParams) string {
	t.Helper()
	var res protocol.WatchResult
	must(t, e.client.Call(context.Background(), "watch", p, &res))
	return res.WatchID
}

// expect waits until an event with path and op has arrived.
func (e *env) expect(t *testing.T, path, op string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		for _, ev := range e.events {
			if ev.Path == path && ev.Op == op {
				e.mu.Unlock()
				return
			}
		}
		e.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.Fatalf("no %s event for %s; got %+v", op, path, e.events)
}

func TestEvents(t *testing.T) {
	e := setup(t)
	e.watch(t, protocol.WatchParams{Path: "proj", Recursive: true})
	p := func(rel string) string { return filepath.Join(e.root, rel) }

	must(t, os.WriteFile(p("proj/a.txt"), []byte("1"), 0o644))
	e.expect(t, "proj/a.txt", "create")
	must(t, os.WriteFile(p("proj/sub/b.txt"), []byte("1"), 0o644))
	e.expect(t, "proj/sub/b.txt", "create")
	f, err := os.OpenFile(p("proj/a.txt"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	for range 50 { // a burst: coalesced
		_, _ = f.Write([]byte("x"))
	}
	f.Close()
	e.expect(t, "proj/a.txt", "modify")
	must(t, os.Rename(p("proj/a.txt"), p("proj/c.txt")))
	e.expect(t, "proj/a.txt", "rename")
	e.expect(t, "proj/c.txt", "rename")
	must(t, os.Remove(p("proj/c.txt")))
	e.expect(t, "proj/c.txt", "delete")

	// A directory made after the watch began is followed, including a file
	// written into it at once.
	must(t, os.MkdirAll(p("proj/new/deeper"), 0o755))
	must(t, os.WriteFile(p("proj/new/deeper/d.txt"), []byte("1"), 0o644))
	e.expect(t, "proj/new", "create")
	e.expect(t, "proj/new/deeper/d.txt", "create")
	must(t, os.WriteFile(p("proj/new/deeper/d.txt"), []byte("22"), 0o644))
	e.expect(t, "proj/new/deeper/d.txt", "modify")

	e.mu.Lock()
	modifies := 0
	for _, ev := range e.events {
		if ev.Path == "proj/a.txt" && ev.Op == "modify" {
			modifies++
		}
	}
	e.mu.Unlock()
	if modifies > 5 {
		t.Errorf("%d modify events for a 50-write burst: not coalesced", modifies)
	}
}

func TestRefusalsAndLimits(t *testing.T) {
	e := setup(t)
	must(t, os.Symlink("/etc", filepath.Join(e.root, "etc")))
	for _, path := range []string{"..", "/etc", "etc", "proj/../.."} {
		err := e.client.Call(context.Background(), "watch", protocol.WatchParams{Path: path}, nil)
		if !rpc.IsCode(err, protocol.CodePermissionDenied) {
			t.Errorf("watch %q: %v, want permission denied", path, err)
		}
	}
	if err := e.client.Call(context.Background(), "watch", protocol.WatchParams{Path: "missing"}, nil); !rpc.IsCode(err, protocol.CodeNotFound) {
		t.Errorf("watch missing: %v", err)
	}
	ids := []string{e.watch(t, protocol.WatchParams{Path: "proj"}), e.watch(t, protocol.WatchParams{Path: "proj/sub"}), e.watch(t, protocol.WatchParams{Path: "."})}
	if err := e.client.Call(context.Background(), "watch", protocol.WatchParams{Path: "proj"}, nil); !rpc.IsCode(err, rpc.CodeLimitReached) {
		t.Fatalf("fourth watch: %v, want limit reached", err)
	}
	must(t, e.client.Call(context.Background(), "unwatch", protocol.UnwatchParams{WatchID: ids[0]}, nil))
	if err := e.client.Call(context.Background(), "unwatch", protocol.UnwatchParams{WatchID: ids[0]}, nil); !rpc.IsCode(err, protocol.CodeNotFound) {
		t.Fatalf("second unwatch: %v", err)
	}
	e.watch(t, protocol.WatchParams{Path: "proj"}) // room again
}

func TestUnwatchStopsEvents(t *testing.T) {
	e := setup(t)
	id := e.watch(t, protocol.WatchParams{Path: "proj"})
	must(t, e.client.Call(context.Background(), "unwatch", protocol.UnwatchParams{WatchID: id}, nil))
	must(t, os.WriteFile(filepath.Join(e.root, "proj", "late.txt"), []byte("1"), 0o644))
	time.Sleep(150 * time.Millisecond)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.events) != 0 {
		t.Fatalf("events after unwatch: %+v", e.events)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
