// Package daemon is agor-daemon: it brings executors up and down through a
// lifecycle backend, keeps one connection to each, serves the executors'
// requests through the broker, records an audit trail, and serves the
// client API, until its context ends.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/api"
	"github.com/agor-sh/agor/internal/daemon/audit"
	"github.com/agor-sh/agor/internal/daemon/broker"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/daemon/egress"
	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/daemon/meter"
	"github.com/agor-sh/agor/internal/daemon/pool"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/daemon/token"
	"github.com/agor-sh/agor/internal/daemon/warmcap"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/sdnotify"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Options are what main hands the daemon.
type Options struct {
	Config   config.Config
	Executor string // agor-executor, for the direct backend
	Root     string // the direct backend's executors' --root ("" : each user's home)
	Agents   string // the direct backend's executors' --agents ("" : their default)
	// ConfigPath is the file Config came from: the direct backend's
	// executors read their policy (min_uid, lists, sandbox) from it too.
	ConfigPath string
	MasterKey  []byte       // the credential store's key
	Listener   net.Listener // the client API's socket
	// Egress is the egress service's socket (network.socket_path); nil
	// when not served (then nobody under network mode proxy gets out).
	Egress net.Listener
	// Gateway is the model gateway's socket (gateway.socket_path); nil
	// when not served.
	Gateway net.Listener
	Log     *slog.Logger
}

// Daemon holds the running pieces.
type Daemon struct {
	cfg     config.Config
	log     *slog.Logger
	ln      net.Listener
	backend executorunit.Backend
	closeBE func()
	pool    *pool.Pool
	tokens  *token.Service
	broker  *broker.Broker
	audit   *audit.Logger
	store   *store.DB
	api     *http.Server
	tcp     net.Listener // the API on TCP (bearer tokens), when configured
	srv     *api.Server
	warm    *warmcap.Cap // warm agents across the host
	started time.Time    // tasks made before are the last daemon's
	settled bool         // what the last daemon left is settled (reconcile.go)
	left    []store.Task // tasks the last daemon left running, to take over (reconcile.go)
	running running      // executors up, for the audit trail
	network *networkSource
	egress  *egress.Service
	egressL net.Listener
	// The model gateway (gateway.go), when gateway.enabled.
	meter    *meter.Meter
	gatewayS *http.Server
	gatewayL net.Listener
}

// New builds the daemon; nothing runs until Run.
func New(o Options) (d *Daemon, err error) {
	if !o.Config.Execution.UseExecutor {
		return nil, errors.New("execution.use_executor: false is not supported: this service never runs agents or commands in the daemon, only in executors (remove the key, or set it to true)")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	d = &Daemon{cfg: o.Config, log: o.Log, ln: o.Listener, egressL: o.Egress, gatewayL: o.Gateway}
	d.network = newNetworkSource(o.ConfigPath, o.Config, o.Log)
	var undo []func()
	defer func() { // on failure, release what was opened, newest first
		for i := len(undo) - 1; err != nil && i >= 0; i-- {
			undo[i]()
		}
	}()
	if d.backend, d.closeBE, err = newBackend(o, d.networkFor); err != nil {
		return nil, err
	}
	undo = append(undo, d.closeBE)
	state := o.Config.Daemon.StateDir
	creds, err := openCreds(state, o.MasterKey, o.Log)
	if err != nil {
		return nil, err
	}
	if d.audit, err = audit.Open(audit.Options{Path: filepath.Join(state, "audit.jsonl"), Log: o.Log,
		MaxBytes: o.Config.Retention.AuditMaxBytes, MaxAge: config.Days(o.Config.Retention.AuditMaxAgeDays)}); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = d.audit.Close() })
	if a := o.Config.API.TCPAddress; a != "" {
		if d.tcp, err = listenTCP(o.Config.API); err != nil {
			return nil, err
		}
		undo = append(undo, func() { _ = d.tcp.Close() })
	}
	if d.store, err = openStore(filepath.Join(state, "agor.db"), o.Config.Store, o.Log); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = d.store.Close() })
	d.started = time.Now()
	d.left = d.leftRunning(o.Config.Execution.Backend)
	d.settled = d.settle(d.started)
	d.build(creds)
	d.buildGateway(o.MasterKey, creds)
	return d, nil
}

// openCreds opens the key store (one file per owner in
// state/credentials) and moves in the previous version's single file.
func openCreds(state string, key []byte, log *slog.Logger) (*credstore.Store, error) {
	creds, err := credstore.Open(filepath.Join(state, "credentials"), key)
	if err != nil {
		return nil, err
	}
	n, err := creds.Import(filepath.Join(state, "credentials.json"))
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Info("credentials moved to one file per owner", "keys", n, "dir", filepath.Join(state, "credentials"))
	}
	return creds, nil
}

// openStore opens the store and settles what the last daemon left: its
// live tasks are marked interrupted, sessions with no live task are not
// left "running". On a full disk that waits for space (settle), and the
// daemon serves reads meanwhile.
func openStore(path string, sc config.Store, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(path)
	if err != nil {
		return nil, err
	}
	db.SetLog(log)
	db.SetFloor(sc.MinFreeBytes)
	return db, nil
}

// build connects the pieces that cannot fail.
func (d *Daemon) build(creds *credstore.Store) {
	e, dc := d.cfg.Execution, d.cfg.Daemon
	d.tokens = token.New(ms(e.SessionTokenExpirationMS), e.SessionTokenMaxUses)
	sink := events.NewSink(d.store, d.log)
	d.broker = broker.New(broker.Config{
		Withheld: withheld(d.cfg.Gateway),
		Direct:   d.cfg.Gateway.DirectAgents,
		Tokens:   d.tokens,
		Keys:     creds,
		Sink:     sink,
		Audit:    d.audit,
		Log:      d.log,
		Limits: broker.Limits{
			Rate:              rate.Limit(dc.ExecutorRequestRate),
			Burst:             dc.ExecutorRequestBurst,
			PermissionTimeout: ms(dc.PermissionTimeoutMS),
		},
	})
	outputs, terms, watches := &api.Outputs{}, &api.Terminals{}, &api.Watches{}
	d.warm = &warmcap.Cap{Max: d.cfg.Agents.WarmPerHost, PerUser: d.cfg.Agents.WarmPerUser, Log: d.log}
	d.pool = &pool.Pool{
		Backend: d.backend,
		Handler: d.executorHandler(outputs, terms, watches),
		Keep:    d.warm.Keep,
		Log:     d.log,
		Max:     e.MaxExecutors,
		Timeout: ms(e.ConnectionTimeoutMS),
		// Let go of an unused executor before its own idle timeout, or the
		// daemon's connection alone would keep it running.
		IdleClose: ms(e.IdleTimeoutMS) / 2,
	}
	if sl, ok := d.backend.(*lifecycle.Slurm); ok { // its Stop asks over the pool's connection first
		sl.Shutdown = func(ctx context.Context, user string) error { return d.pool.Shutdown(ctx, user, "stopped") }
	}
	d.srv = &api.Server{Outputs: outputs, Terminals: terms, Watches: watches,
		MaxFileBytes: d.cfg.API.MaxFileBytes, MaxWatches: d.cfg.API.MaxWatchStreams,
		Sandbox: sandbox.PolicyOf(d.cfg.Sandbox), Events: sink, Store: d.store, Pool: d.pool, Backend: d.backend, Broker: d.broker, Creds: creds, Audit: d.audit, AdminGroup: d.cfg.API.AdminGroup, Log: d.log}
	d.srv.Quotas, d.srv.Retained, d.srv.PrewarmIdle = d.cfg.Quotas, &api.Retained{Size: d.store.Size}, ms(d.cfg.Agents.PrewarmIdleMS)
	// Not on Slurm: an agent started on a guess would hold the job's
	// allocation on a compute node past the executor's idle exit.
	d.srv.PrewarmAtStart = d.cfg.Agents.PrewarmAtExecutorStart && d.cfg.Execution.Backend != "slurm"
	d.srv.Environments = environments(d.cfg)
	d.boundEvents(sink)
	e = d.cfg.Execution
	if !e.RunAsUnixUser {
		d.srv.SharedAccount, d.srv.SharedAccess = e.ExecutorUnixUser, e.SharedAccountAccess
	}
	// The policy is asked before anything is stored for a person, not
	// only when their executor starts.
	d.srv.Admit = func(ctx context.Context, person string) (uint32, error) {
		ex, err := personPolicy(e).Check(ctx, person)
		return uint32(ex.UID), err
	}
	d.api = api.NewHTTPServer(d.srv.Handler())
	n := d.cfg.Network
	d.egress = &egress.Service{Person: d.egressPerson, TaskOf: d.runningTask, Audit: d.audit, Log: d.log,
		MaxPerUser: n.MaxConnectionsPerUser, ConnectTimeout: ms(n.ConnectTimeoutMS)}
	d.srv.NetworkMode, d.srv.EgressTotals = d.networkMode, d.egressTotals
}

// boundEvents puts quotas' event bounds on the sink: a running task's
// events count toward its person's share as they are stored.
func (d *Daemon) boundEvents(sink *events.Sink) {
	q := d.cfg.Quotas
	stop := q.EventQuotaAction != config.EventQuotaStopStoring
	sink.SetBounds(events.Bounds{
		PerTask: q.MaxEventBytesPerTask, PerUser: q.MaxEventBytesPerUser,
		Held: func(o events.Owner) (int64, error) { return d.store.StoredBytes(o.Name, o.UID) }, // her prompts count too
		Exceeded: func(task string, o events.Owner, quota string) {
			d.srv.EventQuotaHit(task, o, quota, stop)
		},
	})
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// personPolicy is who may have work done: min_uid and the allowed lists.
func personPolicy(e config.Execution) executorunit.Policy {
	return executorunit.Policy{MinUID: e.MinUID, AllowedUsers: e.AllowedUsers, AllowedGroups: e.AllowedGroups, SocketTemplate: e.SocketPathTemplate}
}

// environments is the API's view of the environments: the policy decides
// who may use which, from the definitions in the configured directory.
func environments(c config.Config) api.Environments {
	pol := personPolicy(c.Execution)
	pol.EnvironmentsDir = c.Environments.Dir
	return api.Environments{Default: c.Environments.Default, Check: func(ctx context.Context, user, env string) error {
		_, err := pol.CheckEnvironment(ctx, user, env)
		return err
	}}
}

func newBackend(o Options, network executorunit.NetworkFunc) (executorunit.Backend, func(), error) {
	e := o.Config.Execution
	pol := personPolicy(e)
	pol.EnvironmentsDir = o.Config.Environments.Dir
	if !e.RunAsUnixUser && (len(pol.AllowedUsers) > 0 || len(pol.AllowedGroups) > 0) {
		// The lists name people; the shared account runs their work (the
		// executor makes the same exception when it checks itself).
		pol.AllowedUsers = append(slices.Clone(pol.AllowedUsers), e.ExecutorUnixUser)
	}
	switch e.Backend {
	case "systemd":
		// Limits go on each unit as it is ensured, which includes the
		// executors reattached at start: a changed configuration reaches
		// running ones at the daemon's restart.
		s := &executorunit.Systemd{Policy: pol, Limits: o.Config.Limits, Network: network, Log: o.Log}
		return s, s.Close, nil
	case "direct":
		if !o.Config.Limits.Empty() && o.Log != nil {
			o.Log.Warn("limits: the direct backend does not apply them (they are systemd unit properties)")
		}
		dr := &executorunit.Direct{Policy: pol, Network: network, Binary: o.Executor, Root: o.Root, Agents: o.Agents, Config: o.ConfigPath, IdleTimeout: ms(e.IdleTimeoutMS), Log: o.Log}
		if o.Gateway != nil {
			dr.Gateway = o.Config.Gateway.SocketPath
		}
		return dr, dr.Close, nil
	case "slurm":
		return newSlurm(o, pol, network)
	}
	return nil, nil, fmt.Errorf("execution.backend %q is not systemd, direct or slurm", e.Backend)
}

// Run reattaches to running executors, serves until ctx ends, then shuts
// down in order: stop taking requests, close executor connections, flush
// the audit trail.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.close()
	g, ctx := errgroup.WithContext(ctx)
	d.srv.BaseContext = ctx // tasks run until the daemon stops
	g.Go(func() error { return d.backend.Watch(ctx, d.unitChanged) })
	g.Go(func() error { d.adopt(ctx); return nil })
	d.reattach(ctx)
	d.srv.ResumeTasks(d.left)
	local := &api.UIDLimiter{Listener: d.ln, Max: d.cfg.API.MaxConnsPerUID}
	g.Go(func() error { return serveHTTP(ctx, d.api, local) })
	if d.tcp != nil {
		tcp := api.NewHTTPServer((&api.Bearer{Path: d.cfg.API.TokensFile, Accounts: d.srv.Accounts, Audit: d.audit, Log: d.log}).Wrap(d.srv.Handler()))
		g.Go(func() error { return serveHTTP(ctx, tcp, d.tcp) })
		d.log.Info("serving on TCP with bearer tokens", "address", d.tcp.Addr().String(), "tokens_file", d.cfg.API.TokensFile)
	}
	if d.egressL != nil {
		g.Go(func() error { return d.egress.Serve(ctx, d.egressL) })
		d.log.Info("serving the egress service", "socket", d.egressL.Addr().String())
	}
	g.Go(func() error { return d.serveGateway(ctx) })
	g.Go(func() error { d.pool.Reap(ctx); return nil })
	g.Go(func() error { d.sweepTokens(ctx); return nil })
	g.Go(func() error { d.sweep(ctx); return nil })
	g.Go(func() error { d.reconcile(ctx, d.settled); return nil })
	g.Go(func() error { sdnotify.Watchdog(ctx, d.log); return nil })
	d.log.Info("serving", "socket", d.ln.Addr().String(), "backend", d.cfg.Execution.Backend, "version", version.Version)
	sdnotify.Send(d.log, "READY=1\nSTATUS=serving")
	err := g.Wait()
	sdnotify.Send(d.log, "STOPPING=1")
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// adopt gives what the previous version stored without uids (sessions,
// tasks, keys) the uid its name has now, beside serving: until then it is
// visible to admins only. Names the user database did not answer for are
// tried again each minute.
func (d *Daemon) adopt(ctx context.Context) {
	for {
		pending, err := d.srv.Adopt(ctx)
		if err != nil {
			d.log.Error("adopting data stored before uids were recorded", "err", err)
		}
		if err == nil && len(pending) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}

// serveHTTP serves srv on ln until ctx ends, then shuts it down.
func serveHTTP(ctx context.Context, srv *http.Server, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	<-done
	return nil
}

func (d *Daemon) close() {
	d.srv.Wait() // tasks end with the daemon; the store marks them interrupted at the next start
	d.pool.Close()
	d.warm.Wait() // its releases end with their connections
	d.closeBE()
	if err := d.audit.Close(); err != nil {
		d.log.Warn("audit trail: close", "err", err)
	}
	d.lastReconcile()
	if err := d.store.Close(); err != nil {
		d.log.Warn("store: close", "err", err)
	}
	d.log.Info("stopped")
}

// reattach connects to executors that kept running while the daemon was
// away, leaving their processes as they are.
func (d *Daemon) reattach(ctx context.Context) {
	list, err := d.backend.List(ctx)
	if err != nil {
		d.log.Warn("cannot list executors to reattach", "err", err)
		return
	}
	for _, st := range list {
		if st.Service != "active" {
			continue
		}
		d.running.already(st.User)
		if _, ping, err := d.pool.Get(ctx, st.User); err != nil {
			d.log.Warn("reattach failed", "user", st.User, "err", err)
		} else {
			d.log.Info("reattached", "user", st.User, "executor_pid", ping.PID)
		}
	}
}

// unitChanged follows executor services: a service that ended takes its
// connection (and the calls in flight on it) with it at once, unless the
// connection is to a newer executor already.
func (d *Daemon) unitChanged(ev executorunit.UnitChange) {
	if ev.Kind != "service" {
		return
	}
	if ev.Ended() {
		d.pool.ForgetDead(ev.User)
	}
	switch started, stopped := d.running.transition(ev); {
	case stopped:
		d.audit.Log(audit.Record{Action: audit.ExecutorStopped, User: ev.User, Reason: ev.State + "/" + ev.Sub})
	case started:
		d.audit.Log(audit.Record{Action: audit.ExecutorStarted, User: ev.User})
		if d.srv != nil {
			d.srv.ExecutorStarted(ev.User)
		}
	}
}

func (d *Daemon) sweepTokens(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.tokens.Sweep()
		}
	}
}

// listenTCP listens on api.tcp_address, with TLS when a certificate is
// configured (the configuration refuses a non-loopback address without).
func listenTCP(a config.API) (net.Listener, error) {
	var tlsCfg *tls.Config
	if a.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("api.tls_cert/api.tls_key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", a.TCPAddress)
	if err != nil {
		return nil, fmt.Errorf("api.tcp_address: %w", err)
	}
	if tlsCfg != nil {
		return tls.NewListener(ln, tlsCfg), nil
	}
	return ln, nil
}

// executorHandler serves what an executor asks of the daemon. Its key
// names the connection (terminals and watches route by it); tokens, keys
// and warm agents are its account's, in any environment.
func (d *Daemon) executorHandler(outputs *api.Outputs, terms *api.Terminals, watches *api.Watches) func(string) rpc.Handler {
	return func(key string) rpc.Handler {
		account, _ := envdef.SplitKey(key)
		return relayRefusals(d.audit, account, d.warm.Handler(account, terms.Handler(key, outputs.Handler(watches.Handler(key, d.broker.Handler(account))))))
	}
}
