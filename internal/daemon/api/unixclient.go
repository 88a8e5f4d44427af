package api

import (
	"context"
	"net"
)

type unixClientKey struct{}

// withUnixClient marks a request context whose connection is a unix
// socket, which can be handed over.
func withUnixClient(ctx context.Context, c net.Conn) context.Context {
	if unixOf(c) == nil {
		return ctx
	}
	return context.WithValue(ctx, unixClientKey{}, true)
}

func handOffable(ctx context.Context) bool {
	ok, _ := ctx.Value(unixClientKey{}).(bool)
	return ok
}

// unixOf is the unix socket under c, or nil.
func unixOf(c net.Conn) *net.UnixConn {
	for {
		switch v := c.(type) {
		case *net.UnixConn:
			return v
		case *countedConn:
			c = v.Conn
		default:
			return nil
		}
	}
}
