package pool

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// fakeBackend serves one stand-in executor per key, each on a socket of
// its own, answering ping as the key's account.
type fakeBackend struct {
	executorunit.Backend // the methods not used here
	dir                  string
	mu                   sync.Mutex
	ensured              []string
	lns                  []net.Listener
	wg                   sync.WaitGroup
}

func (b *fakeBackend) Ensure(_ context.Context, key string) (executorunit.Executor, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ensured = append(b.ensured, key)
	sock := filepath.Join(b.dir, strings.ReplaceAll(key, ":", "_")+".sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return executorunit.Executor{}, err
	}
	b.lns = append(b.lns, ln)
	account, _ := envdef.SplitKey(key)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rpc.NewClient(c, rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) {
				return protocol.PingResult{User: account, UID: 1000, PID: len(b.ensured)}, nil
			}), rpc.Options{})
		}
	}()
	return executorunit.Executor{User: account, UID: 1000, Socket: sock}, nil
}

func (b *fakeBackend) close() {
	for _, ln := range b.lns {
		ln.Close()
	}
	b.wg.Wait()
}

// TestEnvironmentKeys: one person's executors on the host and in an
// environment are separate connections, side by side; each connection's
// handler knows its key, and her notifications share one allowance.
func TestEnvironmentKeys(t *testing.T) {
	b := &fakeBackend{dir: t.TempDir()}
	var handlers []string
	p := &Pool{Backend: b, Handler: func(key string) rpc.Handler {
		handlers = append(handlers, key)
		return rpc.HandlerFunc(func(context.Context, *rpc.Request) (any, error) { return nil, nil })
	}}
	defer b.close()
	defer p.Close()
	ctx := context.Background()
	host, _, err := p.Get(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	inPy, _, err := p.Get(ctx, envdef.Key("alice", "py"))
	if err != nil {
		t.Fatal(err)
	}
	if host == inPy {
		t.Error("the host and py share one connection")
	}
	live := p.Live()
	slices.Sort(live)
	if want := []string{"alice", "alice:py"}; !slices.Equal(live, want) || !slices.Equal(b.ensured, want) || !slices.Equal(handlers, want) {
		t.Errorf("live %q, ensured %q, handlers %q; want %q each", live, b.ensured, handlers, want)
	}
	mine := p.LiveOf("alice")
	slices.Sort(mine)
	if want := []string{"alice", "alice:py"}; !slices.Equal(mine, want) || len(p.LiveOf("bob")) != 0 {
		t.Errorf("LiveOf(alice) = %q, want %q; LiveOf(bob) = %q", mine, want, p.LiveOf("bob"))
	}
	if len(p.pacers) != 1 || p.pacers["alice"] == nil {
		t.Errorf("pacers %v: want alice's one", p.pacers)
	}
}
