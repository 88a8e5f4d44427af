package executor

import (
	"context"
	"log/slog"
	"net"
	"strconv"

	"github.com/agor-sh/agor/internal/executor/egress"
)

// startEgress serves the proxy port of --egress-socket, and sets the
// proxy variables every child inherits. Outside a private network
// namespace it refuses (others could use the port as this person): the
// executor then has no way out, and the daemon refuses to serve a person
// under proxy whose unit lacks PrivateNetwork=yes anyway.
func startEgress(ctx context.Context, o *Options, log *slog.Logger) func() {
	if o.Egress == "" {
		return func() {}
	}
	if err := egress.CheckPrivate(); err != nil {
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.EgressPort)))
	if err != nil {
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	if err := egress.SetEnv(o.EgressPort); err != nil {
		ln.Close()
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := &egress.Relay{Socket: o.Egress, Log: log}
		if err := r.Serve(ctx, ln); err != nil {
			log.Error("egress relay stopped", "err", err)
		}
	}()
	log.Info("egress proxy served", "address", ln.Addr().String(), "egress_socket", o.Egress)
	return func() { cancel(); <-done }
}
