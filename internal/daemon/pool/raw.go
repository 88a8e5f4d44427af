package pool

import (
	"context"
	"net"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func (p *Pool) setSocket(user, socket string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sockets == nil {
		p.sockets = map[string]string{}
	}
	p.sockets[user] = socket
}

// DialRaw opens a connection of its own to user's executor, beside the
// shared one, for a stream that leaves JSON-RPC after its first request
// (attach_terminal_raw). The executor is brought up as for Get.
func (p *Pool) DialRaw(ctx context.Context, user string) (*net.UnixConn, error) {
	if _, _, err := p.Get(ctx, user); err != nil {
		return nil, err
	}
	p.mu.Lock()
	sock := p.sockets[user]
	p.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeExecutorUnavailable, protocol.ReasonConnectFailed, "executor of %s: %v", user, err)
	}
	return c.(*net.UnixConn), nil
}

// RawCapable reports whether user's executor can take a connection of its
// own beside the shared one: one on a socket can, one that dialled back
// (the slurm backend) cannot, and its terminals stay on JSON-RPC.
func (p *Pool) RawCapable(user string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sockets[user] != ""
}
