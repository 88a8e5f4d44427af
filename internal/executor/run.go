package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/executor/task"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/logging"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/sdnotify"
	"github.com/agor-sh/agor/internal/unixsock"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Exit statuses of agor-executor, as documented in --help.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitRefused (EX_CONFIG): this account may not have an executor. The
	// unit names it in RestartPreventExitStatus=, so it is not retried.
	ExitRefused = 78
)

// Options is what Run needs: the command line's settings (ParseFlags
// reads them, --help says what each means) and the process's streams.
type Options struct {
	Root       string // file, exec and watch paths resolve beneath it
	RootGiven  bool   // Root was named (flag or environment): failing to open it is fatal
	Agents     string // the agent CLIs' settings file
	Listen     string // a Unix socket to listen on instead of the activated one
	Dial       string // host:port of the daemon's dial-back listener (a Slurm job)
	DialCA     string
	DialName   string
	JobID      string
	SocketName string // FileDescriptorName= of the activated socket
	DaemonUser string // the one non-root account served
	Config     string // the daemon's configuration file (the execution policy)
	// Environment names the environment this executor runs in ("": the
	// host); its definition in EnvironmentsDir must list the account.
	Environment     string
	EnvironmentsDir string
	Egress          string // the daemon's egress socket, under network mode proxy
	Gateway         string // the daemon's model gateway socket
	EgressPort      int
	IdleTimeout     time.Duration
	StopTimeout     time.Duration
	MaxLine         int
	MaxInFlight     int
	LogFormat       string
	LogLevel        string
	Stdin           io.Reader // where --dial reads its token (nil: os.Stdin)
	Stderr          io.Writer // the log (nil: os.Stderr)
}

// Run serves as the executor of the account this process runs as, until
// ctx ends, it is idle or stopped, and returns the process's exit status
// (ExitOK, ExitFailure, ExitUsage or ExitRefused), having logged why.
func Run(ctx context.Context, o Options) int {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	log, err := newLogger(&o)
	if err != nil {
		fmt.Fprintln(o.Stderr, "agor-executor:", err)
		return ExitUsage
	}
	if os.Geteuid() == 0 {
		log.Error("refusing to run as root: an executor runs as the user it serves (agor-executor@USER with User=%I)")
		return ExitUsage
	}
	policy, code, ok := checkAccount(ctx, &o, log)
	if !ok {
		return code
	}
	cfg, err := serverConfig(ctx, &o, log)
	if err != nil {
		log.Error(err.Error())
		return ExitUsage
	}
	applyLoginUmask(ctx, log)
	return runServer(ctx, &o, cfg, policy, log)
}

// runServer opens what the methods need and serves them.
func runServer(ctx context.Context, o *Options, cfg Config, policy config.Config, log *slog.Logger) int {
	agents, err := task.OpenAgents(o.Agents, log)
	if err != nil {
		log.Error(err.Error())
		return ExitUsage
	}
	root, err := openRoot(o.Root)
	if err != nil && o.RootGiven {
		log.Error(err.Error())
		return ExitUsage
	}
	if err != nil {
		// An account without a home still gets an executor (ping, and
		// later agents): only the file and exec methods are off.
		log.Warn("file and exec methods disabled", "err", err)
	} else {
		defer root.Close()
	}
	ln, err := listenerFor(o)
	if err != nil {
		log.Error(err.Error())
		return ExitFailure
	}
	stopRelay := startEgress(ctx, o, log)
	defer stopRelay()
	return serve(ctx, cfg, root, agents, sandboxPolicy(policy, log), task.WarmLimitsOf(policy.Agents), o.Gateway, ln, log)
}

func openRoot(dir string) (*fsroot.Root, error) {
	if dir == "" {
		return nil, errors.New("no --root and no $HOME: name the directory file and exec paths resolve beneath")
	}
	return fsroot.Open(dir)
}

func newLogger(o *Options) (*slog.Logger, error) {
	f, err := logging.ParseFormat(o.LogFormat)
	if err != nil {
		return nil, err
	}
	lvl, err := logging.ParseLevel(o.LogLevel)
	if err != nil {
		return nil, err
	}
	return logging.New("agor-executor", f, lvl, o.Stderr).With("user", CurrentUser()), nil
}

// sandboxPolicy is the configuration's sandbox section as the executor
// applies it, with itself as the launcher.
func sandboxPolicy(c config.Config, log *slog.Logger) *sandbox.Policy {
	self, err := os.Executable()
	if err != nil {
		log.Warn("no sandbox: cannot name this executable", "err", err)
		return nil
	}
	p := sandbox.PolicyOf(c.Sandbox)
	p.Self, p.TempDir, p.Names = self, os.TempDir(), ownNames(log)
	log.Debug("sandbox", "default", p.Default, "allowed", p.Allowed, "required", p.Required, "landlock_abi", sandbox.ABI())
	return p
}

// ownNames are this account's passwd and group entries, for a confined
// task's view, which cannot ask a directory itself (sandbox.Names); none
// when the user database does not answer: her names then show as numbers.
func ownNames(log *slog.Logger) sandbox.Names {
	ctx, cancel := context.WithTimeout(context.Background(), identity.Timeout)
	defer cancel()
	u, err := identity.Default().LookupUID(ctx, uint32(os.Getuid()))
	if err != nil {
		log.Warn("sandbox: own account not resolved: a confined task sees its uid, not its name", "err", err)
		return sandbox.Names{}
	}
	g, err := identity.Default().LookupGID(ctx, u.GID)
	if err != nil {
		log.Warn("sandbox: own group not resolved: a confined task sees its gid, not its name", "gid", u.GID, "err", err)
	}
	return sandbox.NamesOf(u, g.Name)
}

func serverConfig(ctx context.Context, o *Options, log *slog.Logger) (Config, error) {
	var pol peer.Policy
	if o.Dial == "" {
		// A dialled executor has no peers to check (the daemon proved
		// itself with the pinned CA), and a compute node need not know
		// the daemon's account.
		var err error
		if pol, err = PolicyFor(ctx, o.DaemonUser); err != nil {
			return Config{}, err
		}
	}
	return Config{
		Policy:      pol,
		IdleTimeout: o.IdleTimeout,
		StopTimeout: o.StopTimeout,
		RPC:         rpc.Options{MaxLine: o.MaxLine, MaxInFlight: o.MaxInFlight},
		Logger:      log,
		Notifier:    sdNotifier{log: log},
	}, nil
}

// listenerFor is where connections come from: the dial-back (--dial),
// a socket of its own (--listen), or the one systemd passes.
func listenerFor(o *Options) (Listener, error) {
	if o.Dial != "" {
		return dialListener(o, o.Stdin)
	}
	if o.Listen != "" {
		return unixsock.Listen(o.Listen)
	}
	return Activated(o.SocketName)
}

func serve(ctx context.Context, cfg Config, root *fsroot.Root, agents *task.AgentsFile, box *sandbox.Policy, warm task.WarmLimits, gateway string, ln Listener, log *slog.Logger) int {
	srv := NewServer(cfg)
	closePrimitives := registerPrimitives(srv, root, agents, box, warm, gateway, log)
	registerJobs(srv) // after: submissions need no root directory
	defer closePrimitives()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); srv.RunStatus(ctx, 5*time.Second) }()
	go func() { defer wg.Done(); sdnotify.Watchdog(ctx, log) }()
	stopOnNotice(srv, log)
	log.Info("serving", "socket", ln.Addr().String(), "version", version.Version)
	err := srv.Serve(ctx, ln)
	cancel()
	wg.Wait()
	switch {
	case err == nil, errors.Is(err, ErrIdle):
		log.Info("exited")
		return ExitOK
	default:
		log.Error("serve failed", "err", err)
		return ExitFailure
	}
}

type sdNotifier struct{ log *slog.Logger }

// Notify sends state; not running under systemd is normal and silent.
func (n sdNotifier) Notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Debug("sd_notify failed", "err", err)
	}
}

// stopOnNotice: SIGUSR1 is Slurm's notice that the job nears its time
// limit (sbatch --signal=B:USR1@...). Stop as on SIGTERM while there is
// time to let running work finish; the session resumes in the next job.
func stopOnNotice(srv *Server, log *slog.Logger) {
	notice := make(chan os.Signal, 1)
	signal.Notify(notice, syscall.SIGUSR1)
	go func() {
		<-notice
		log.Warn("the job nears its time limit (SIGUSR1): stopping; running work may finish")
		srv.Stop("time limit")
	}()
}
