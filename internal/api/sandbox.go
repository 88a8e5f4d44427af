package api

import (
	"slices"

	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/rpc"
)

// SandboxPolicy is which sandbox levels a request may ask for and the one
// it gets when it names none (the configuration's sandbox section; the
// executor applies the same file again).
type SandboxPolicy struct {
	Default string
	Allowed []string
}

// sandboxLevel resolves a request's level, refusing one not allowed.
func (s *Server) sandboxLevel(requested string) (string, error) {
	if err := protocol.ValidSandbox(requested); err != nil {
		return "", err
	}
	p := s.Sandbox
	if requested == "" {
		return p.Default, nil
	}
	if len(p.Allowed) > 0 && !slices.Contains(p.Allowed, requested) {
		return "", rpc.InvalidParams("sandbox", "level "+requested+" is not allowed here (sandbox.allowed)")
	}
	return requested, nil
}
