package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/lifecycle"
	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/slurm"
)

// newSlurm is the slurm backend: the systemd backend for each person's
// executor on this host (which submits their job), the job-token registry
// in the state directory (hashes only; a restarted daemon takes its jobs'
// dial-backs again), and the TLS listener the jobs dial.
func newSlurm(o Options, pol executorunit.Policy, network executorunit.NetworkFunc) (executorunit.Backend, func(), error) {
	c := o.Config
	local := &executorunit.Systemd{Policy: pol, Log: o.Log}
	jobs, err := dialback.OpenJobs(filepath.Join(c.Daemon.StateDir, "dialback-jobs.json"))
	if err != nil {
		local.Close()
		return nil, nil, fmt.Errorf("slurm: %w", err)
	}
	cmds := slurm.Commands{}
	s := &lifecycle.Slurm{Policy: pol, Network: network, Local: local, Jobs: jobs, Config: c.Slurm, Log: o.Log,
		IdleTimeout: ms(c.Execution.IdleTimeoutMS),
		Queue:       func(ctx context.Context) ([]slurm.Job, error) { return cmds.Queue(ctx, c.Slurm.JobName) }}
	stop, err := serveDialBack(c.Slurm, jobs, s.Deliver, o.Log)
	if err != nil {
		local.Close()
		return nil, nil, err
	}
	return s, func() { stop(); local.Close() }, nil
}

// serveDialBack listens on slurm.listen with the configured certificate.
func serveDialBack(c config.Slurm, jobs *dialback.Jobs, deliver func(dialback.Accepted), log *slog.Logger) (stop func(), err error) {
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("slurm.tls_cert, slurm.tls_key: %w", err)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("slurm.listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &dialback.Server{Jobs: jobs, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Log: log, Deliver: deliver}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			log.Error("dial-back listener ended", "err", err)
		}
	}()
	log.Info("dial-back listener", "address", ln.Addr().String(), "advertised", c.AdvertiseAddr())
	return func() { cancel(); <-done }, nil
}
