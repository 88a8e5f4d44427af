package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"

	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/apiwire"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// tcpUnconfined is unconfined for a caller on the TCP listener: a bearer
// token carries no process, so a confined task holding its person's token
// would otherwise get unconfined work done over loopback. The kernel's
// socket table names the account that made the client's socket and its
// inode; that account's executor says whether a confined task holds it.
// A connection from another host has no socket here and is let through;
// one whose socket nobody holds any more (sent, then closed) is refused,
// and so is one the daemon cannot tell about: confinement fails closed.
func (s *Server) tcpUnconfined(r *http.Request) error {
	client, server, ok := tcpEnds(r)
	if !ok || s.Pool == nil {
		return nil
	}
	sock, found, err := peer.TCPClient(client, server)
	switch {
	case err != nil:
		return s.refuseTCP(client, "the kernel's socket table could not be read: %v", err)
	case !found:
		return nil // another host: no task of this host's
	case sock.Inode == 0:
		return s.refuseTCP(client, "no process holds the client's end of this connection any more")
	}
	u, err := s.accounts().LookupUID(r.Context(), sock.UID)
	if errors.Is(err, identity.ErrNotFound) {
		return nil // no person's account: none of her tasks
	} else if err != nil {
		return s.refuseTCP(client, "the user database did not answer for uid %d: %v", sock.UID, err)
	}
	return s.askHolders(r.Context(), client, u.Name, sock.Inode)
}

// askHolders asks person's executors, those that run (no executor, no
// task), on the host and in environments, whether a confined task of hers
// holds the socket.
func (s *Server) askHolders(ctx context.Context, client netip.AddrPort, person string, inode uint64) error {
	keys := s.Pool.LiveOf(s.executorOf(person))
	if len(keys) == 0 {
		return nil
	}
	holders := 0
	for _, exe := range keys {
		var res protocol.SocketHoldersResult
		if err := s.Pool.Call(ctx, exe, protocol.MethodSocketHolders, protocol.SocketHoldersParams{Inode: inode}, &res); err != nil {
			return s.refuseTCP(client, "%s's executor %s could not say who holds this connection: %v", person, exe, err)
		}
		if res.Confined {
			return s.refuseTCP(client, "this request comes from inside a sandboxed task of %s's over TCP: the daemon does not act for confined work", person)
		}
		holders += res.Holders
	}
	if holders == 0 {
		return s.refuseTCP(client, "no process of %s's holds the client's end of this connection", person)
	}
	return nil
}

func (s *Server) refuseTCP(client netip.AddrPort, format string, args ...any) error {
	err := rpc.Errorf(protocol.CodePermissionDenied, apiwire.ReasonConfinedCaller, format, args...)
	s.log().Warn("TCP request refused: its client may be confined", "client", client.String(), "err", err.Error())
	return err
}

// tcpEnds is a TCP request's client and server addresses (false on the
// Unix socket).
func tcpEnds(r *http.Request) (client, server netip.AddrPort, ok bool) {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if local == nil {
		return client, server, false
	}
	client, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return client, server, false
	}
	return client, local.AddrPort(), true
}
