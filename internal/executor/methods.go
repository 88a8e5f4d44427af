package executor

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/agor-sh/agor/internal/rpc"
	"github.com/agor-sh/agor/internal/version"
)

// PingResult is ping's reply.
type PingResult struct {
	Pong      bool   `json:"pong"`
	Timestamp int64  `json:"timestamp"` // Unix milliseconds
	PID       int    `json:"pid"`
	UID       int    `json:"uid"`
	User      string `json:"user"`
	Version   string `json:"version"`
	UptimeMS  int64  `json:"uptime_ms"`
}

// ShutdownParams asks the executor to stop.
type ShutdownParams struct {
	Reason    string `json:"reason"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// Validate checks the fields.
func (p ShutdownParams) Validate() error {
	if p.TimeoutMS < 0 {
		return rpc.InvalidParams("timeout_ms", "must not be negative")
	}
	return nil
}

// ShutdownResult says how the executor left its work.
type ShutdownResult struct {
	Status string `json:"status"` // idle, completed or interrupted
}

func (s *Server) registerBuiltins() {
	s.mux.RegisterInline("ping", rpc.Method(s.ping))
	s.mux.Register("shutdown", rpc.Method(s.shutdown))
}

func (s *Server) ping(context.Context, struct{}) (PingResult, error) {
	now := time.Now()
	return PingResult{
		Pong:      true,
		Timestamp: now.UnixMilli(),
		PID:       os.Getpid(),
		UID:       os.Getuid(),
		User:      CurrentUser(),
		Version:   version.Version,
		UptimeMS:  now.Sub(s.started).Milliseconds(),
	}, nil
}

// shutdown lets other in-flight work finish for up to timeout_ms, then
// stops the executor; the reply goes out before the connections close.
func (s *Server) shutdown(_ context.Context, p ShutdownParams) (ShutdownResult, error) {
	reason := p.Reason
	if reason == "" {
		reason = "requested"
	}
	status := "idle"
	if s.inFlight() > 1 { // more than this request
		status = "completed"
		if !s.waitInFlight(1, time.Duration(p.TimeoutMS)*time.Millisecond) {
			status = "interrupted"
		}
	}
	grace := s.cfg.StopTimeout
	if status == "interrupted" {
		grace = time.Second // time enough for this reply; the rest is cancelled
	}
	s.stop("shutdown requested: "+reason, grace)
	return ShutdownResult{Status: status}, nil
}

// loggedMux is the mux with a journal line for every request.
type loggedMux struct {
	rpc.HandlerFunc
	*rpc.Mux
}

// Handle resolves the ambiguity between the embedded fields.
func (l loggedMux) Handle(ctx context.Context, r *rpc.Request) (any, error) {
	return l.HandlerFunc(ctx, r)
}

// logged wraps the mux so every request leaves a journal line with its
// method (ping only at debug level: the daemon pings often).
func (s *Server) logged(log *slog.Logger) rpc.Handler {
	return loggedMux{Mux: s.mux, HandlerFunc: func(ctx context.Context, r *rpc.Request) (any, error) {
		start := time.Now()
		res, err := s.mux.Handle(ctx, r)
		level := slog.LevelInfo
		if r.Method == "ping" || r.Notification {
			level = slog.LevelDebug
		}
		attrs := []any{"method", r.Method, "duration_ms", time.Since(start).Milliseconds()}
		if err != nil {
			level = max(level, slog.LevelInfo)
			attrs = append(attrs, "err", err)
		}
		log.Log(ctx, level, "request", attrs...)
		return res, err
	}}
}
