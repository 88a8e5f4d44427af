package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/audit"

	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/gateway"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// buildGateway sets up the model gateway when gateway.enabled: the meter
// decides (credentials, keys, budgets, ledger), the gateway forwards,
// and the API hands each task's executor its credential, which the
// executor's relay puts on the connections of the task's processes (the
// door line): the agent holds a placeholder.
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
		Network: d.networkFor, RunsAs: d.runsAs}
	h := gateway.New(d.meter, d.meter, gateway.Options{Log: d.log, MaxInFlight: d.cfg.Gateway.MaxInFlight, Door: true})
	d.gatewayS = &http.Server{Handler: h, ReadHeaderTimeout: d.api.ReadHeaderTimeout, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		return gateway.DoorContext(peerContext(ctx, c), c)
	}}
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
	return serveHTTP(ctx, d.gatewayS, gateway.DoorListener(d.gatewayL))
}

// peerContext puts the relaying executor's SO_PEERCRED in each request's
// context: a credential is good only from the uid it was made for.
func peerContext(ctx context.Context, c net.Conn) context.Context {
	if dc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = dc.NetConn()
	}
	if cred, err := peer.Of(c); err == nil {
		return peer.NewContext(ctx, cred)
	}
	return ctx
}

// relayRefusals audits gateway_refused, what account's executor says its
// gateway relay turned away, and passes every other message to next. It
// is account's word about account's relay (account can say anything on
// this connection), so it is recorded for account only; a flood of it is
// one record a window (Aggregate).
func relayRefusals(trail *audit.Logger, account string, next rpc.Handler) rpc.Handler {
	return rpc.HandlerFunc(func(ctx context.Context, r *rpc.Request) (any, error) {
		if r.Method != protocol.MethodGatewayRefused {
			return next.Handle(ctx, r)
		}
		var p protocol.GatewayRefusedParams
		if err := rpc.Bind(r.Params, &p); err != nil {
			return nil, err
		}
		why := "at " + account + "'s executor's relay: " + p.Reason
		if p.UID != nil {
			why += fmt.Sprintf(" (from uid %d)", *p.UID)
		}
		trail.AggregateN(audit.Record{Action: audit.GatewayRefused, User: account, Task: p.Task, Reason: why}, p.Count)
		return nil, nil
	})
}

// runsAs is the uid whose executor runs t, for the gateway's door: with
// run_as_unix_user false, executor_unix_user's (looked up now; an
// account that cannot be found refuses), else the task's person's.
func (d *Daemon) runsAs(ctx context.Context, t store.Task) (int64, error) {
	e := d.cfg.Execution
	if e.RunAsUnixUser {
		return t.UID, nil
	}
	acc := d.srv.Accounts
	if acc == nil {
		acc = identity.Default()
	}
	u, err := acc.LookupName(ctx, e.ExecutorUnixUser)
	if err != nil {
		return 0, fmt.Errorf("executor_unix_user %q: %w", e.ExecutorUnixUser, err)
	}
	return int64(u.UID), nil
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
