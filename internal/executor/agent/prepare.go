package agent

import (
	"context"
	"fmt"
	"time"
)

// Preparer is an Opener whose process can be started before its first
// prompt exists (a pre-warmed agent): everything a first turn does
// except sending the prompt.
type Preparer interface {
	Opener
	// Prepare starts the process and begins its handshake, and returns
	// at once: the handshake goes on while the prompt is being written.
	// The Live's first Turn waits for what is left of it, within
	// prepareWait; a process whose handshake failed answers ErrGone, so
	// the turn runs cold. req's Prompt and TaskID are not used.
	Prepare(ctx context.Context, req Request) (Live, error)
}

var (
	_ Preparer = Claude{}
	_ Preparer = Codex{}
	_ Preparer = (*ACP)(nil)
)

// prepareWait bounds a pre-warmed agent's handshake: one that has not
// answered by then is no use to a prompt, which runs cold instead.
const prepareWait = 60 * time.Second

// handshake runs open on its own goroutine for a prepared process, within
// prepareWait; the returned channel is closed when it is over, and *err
// then holds its outcome. The process's end (kill) ends it too.
func handshake(ctx context.Context, err *error, open func(context.Context) error) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prepareWait)
		defer cancel()
		*err = open(hctx)
	}()
	return done
}

// awaitHandshake waits for a prepared process's handshake (ready nil:
// none, the process was opened by a turn). A failed handshake is ErrGone.
func awaitHandshake(ctx context.Context, ready <-chan struct{}, err *error) error {
	if ready == nil {
		return nil
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if *err != nil {
		return fmt.Errorf("%w: its handshake: %w", ErrGone, *err)
	}
	return nil
}

// Ready is closed when l's handshake is over: at once for a process
// that did not run one ahead of its turn, and nil when it cannot be told
// (Claude Code's answer to initialize is read by the first turn).
func Ready(l Live) <-chan struct{} {
	switch l := l.(type) {
	case *codexLive:
		return readyOr(l.ready)
	case *acpLive:
		return readyOr(l.ready)
	case *claudeLive:
		return nil
	}
	return readyOr(nil)
}

func readyOr(c <-chan struct{}) <-chan struct{} {
	if c != nil {
		return c
	}
	done := make(chan struct{})
	close(done)
	return done
}
