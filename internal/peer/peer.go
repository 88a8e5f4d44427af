// Package peer reads the kernel-verified identity (SO_PEERCRED) of the
// process at the other end of a Unix socket, and carries it in a context.
package peer

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Cred is the peer's identity as the kernel saw it at connect time.
type Cred struct {
	PID int32
	UID uint32
	GID uint32
}

// Of returns the credentials of the process that connected c.
func Of(c net.Conn) (Cred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("peer credentials: %T is not a Unix socket", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("peer credentials: getsockopt SO_PEERCRED: %w", serr)
	}
	return Cred{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}, nil
}

// ErrRefused is returned by a Policy that does not serve a peer.
var ErrRefused = errors.New("peer not allowed")

// Policy says which peers a server serves: root, when AllowRoot, and
// processes running as UID. Nothing else: sharing a group with the daemon
// is not being the daemon.
type Policy struct {
	AllowRoot bool
	UID       uint32
}

// Check returns nil when c may be served, or an error wrapping ErrRefused.
func (p Policy) Check(c Cred) error {
	switch {
	case p.AllowRoot && c.UID == 0:
		return nil
	case c.UID == p.UID:
		return nil
	}
	return fmt.Errorf("%w: uid %d gid %d pid %d", ErrRefused, c.UID, c.GID, c.PID)
}

type ctxKey struct{}

// NewContext returns ctx carrying c.
func NewContext(ctx context.Context, c Cred) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the peer's credentials stored by NewContext.
func FromContext(ctx context.Context) (Cred, bool) {
	c, ok := ctx.Value(ctxKey{}).(Cred)
	return c, ok
}
