package daemon

import (
	"context"
	"github.com/agor-sh/agor/internal/config"
	"net"
	"net/http"

	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
)

// buildGateway sets up the model gateway when gateway.enabled: the meter
// decides (tokens, keys, budgets, ledger), the gateway forwards, and the
// API hands each task a token in place of a key.
func (d *Daemon) buildGateway(master []byte, creds *credstore.Store) {
	if !d.cfg.Gateway.Enabled {
		// agor-daemon.socket passes the socket all the same: a caller is
		// told, not left waiting in its backlog.
		d.gatewayS = &http.Server{ReadHeaderTimeout: d.api.ReadHeaderTimeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "agor: the model gateway is off (gateway.enabled in /etc/agor/config.yaml)", http.StatusServiceUnavailable)
		})}
		return
	}
	d.meter = &meter.Meter{Signer: meter.NewSigner(master), Store: d.store, Keys: creds,
		Config: d.network.Gateway, InGroup: d.inGroup, Log: d.log, Audit: d.audit, Notice: d.srv.TaskNotice,
		Network: d.networkFor}
	h := gateway.New(d.meter, d.meter, gateway.Options{Log: d.log, MaxInFlight: d.cfg.Gateway.MaxInFlight})
	d.gatewayS = &http.Server{Handler: h, ConnContext: peerContext, ReadHeaderTimeout: d.api.ReadHeaderTimeout}
	d.srv.Gateway = d.meter
}

// serveGateway serves the gateway on its socket until ctx ends. Without
// the socket, tasks cannot reach a model: the API refuses them (and
// doctor says why) rather than hand out keys.
func (d *Daemon) serveGateway(ctx context.Context) error {
	if d.gatewayS == nil || d.gatewayL == nil {
		return nil
	}
	d.log.Info("serving the model gateway", "socket", d.gatewayL.Addr().String())
	return serveHTTP(ctx, d.gatewayS, d.gatewayL)
}

// peerContext puts the relaying executor's SO_PEERCRED in each request's
// context: a token is good only from the uid it was made for.
func peerContext(ctx context.Context, c net.Conn) context.Context {
	if cred, err := peer.Of(c); err == nil {
		return peer.NewContext(ctx, cred)
	}
	return ctx
}

// inGroup is whether user is in group, for budgets by group.
func (d *Daemon) inGroup(user, group string) (bool, error) {
	ctx, acc := context.Background(), d.srv.Accounts
	if acc == nil {
		acc = identity.Default()
	}
	u, err := acc.LookupName(ctx, user)
	if err != nil {
		return false, err
	}
	return acc.InGroup(ctx, u, group)
}

// withheld are the keys the gateway puts on requests itself, when it is
// on: executors are never handed them (but for direct agents).
func withheld(g config.Gateway) []string {
	if !g.Enabled {
		return nil
	}
	return meter.KeyNames()
}
