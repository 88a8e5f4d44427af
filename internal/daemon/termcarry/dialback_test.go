package termcarry

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
)

// An executor that floods terminal_output while holding back its attach
// reply gets only maxPending kept for the client meanwhile.
func TestTermPendingBounded(t *testing.T) {
	c := &dialBackClient{enc: json.NewEncoder(io.Discard), flush: func() error { return nil }, done: make(chan struct{})}
	chunk := make([]byte, 1<<20)
	for i := range 64 {
		c.output(protocol.TerminalOutput{TerminalID: "t1", Seq: int64(i), Data: chunk})
	}
	held := 0
	for _, o := range c.pending {
		held += len(o.Data)
	}
	if held > maxPending {
		t.Fatalf("%d bytes held before the attach reply, want at most %d", held, maxPending)
	}
	c.start(protocol.AttachTerminalResult{})
	if c.pending != nil {
		t.Error("pending kept after start")
	}
}
