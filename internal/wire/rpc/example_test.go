package rpc_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os/exec"

	"github.com/agor-sh/agor/internal/wire/rpc"
)

// stdio joins a child's stdout (read) and stdin (write) into one stream.
type stdio struct {
	io.Reader
	io.WriteCloser
}

// An agent CLI spoken to over its stdin and stdout: it may print stray
// log lines, omits "jsonrpc" (codex app-server), and its raw lines are
// recorded with a secret redacted. The agent's requests (permission
// questions) and notifications (updates) arrive through the Mux; our
// calls go out with Call.
func ExampleOptions_lenient() {
	cmd := exec.Command("codex", "app-server")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return
	}
	mux := rpc.NewMux()
	mux.Register("item/agentMessage/delta", func(_ context.Context, r *rpc.Request) (any, error) {
		slog.Info("delta", "raw", string(r.Raw)) // the line as read, redacted
		return nil, nil
	})
	mux.Register("execCommandApproval", func(context.Context, *rpc.Request) (any, error) {
		return map[string]string{"decision": "denied"}, nil
	})
	c := rpc.NewConn(stdio{stdout, stdin}, mux, rpc.Options{
		Lenient: true, // skip stray lines, accept messages without "jsonrpc"
		Bare:    true, // and send none
		OnLine: func(line []byte) []byte {
			return bytes.ReplaceAll(line, []byte("sk-secret"), []byte("[redacted]"))
		},
	})
	ctx := context.Background()
	go func() { _ = c.Serve(ctx) }()
	var res struct {
		Thread struct{ ID string } `json:"thread"`
	}
	_ = c.Call(ctx, "thread/start", map[string]any{"cwd": "/src"}, &res)
	_ = c.Close()
	_ = cmd.Wait()
}
