package api

import (
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// sandboxLevel resolves a request's sandbox level against the
// configuration (the executor applies the same file again), refusing one
// not allowed; nil Sandbox: the request's own, or off.
func (s *Server) sandboxLevel(requested string) (string, error) {
	if err := protocol.ValidSandbox(requested); err != nil {
		return "", err
	}
	if s.Sandbox == nil {
		return requested, nil
	}
	l, err := s.Sandbox.Resolve(requested)
	if err != nil {
		return "", rpc.InvalidParams("sandbox", err.Error())
	}
	return string(l), nil
}
