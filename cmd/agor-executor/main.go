// Command agor-executor serves one user's agent work, terminals and files
// to agor-daemon over JSON-RPC on a socket-activated Unix socket.
package main

import (
	"strconv"

	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executor"
	"github.com/agor-sh/agor/internal/executor/egress"
	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/executor/task"
	"github.com/agor-sh/agor/internal/flagenv"
	"github.com/agor-sh/agor/internal/identity"
	"github.com/agor-sh/agor/internal/logging"
	"github.com/agor-sh/agor/internal/peer"
	"github.com/agor-sh/agor/internal/sandbox"
	"github.com/agor-sh/agor/internal/sdnotify"
	"github.com/agor-sh/agor/internal/unixsock"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// Exit statuses, as documented in --help.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitRefused (EX_CONFIG): this account may not have an executor. The
	// unit names it in RestartPreventExitStatus=, so it is not retried.
	exitRefused = 78
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LauncherArg {
		// Started as the sandbox launcher: confine this process, then
		// exec the command (returns only on failure).
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // after the first signal, a second one kills
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	root        string
	rootGiven   bool
	agents      string
	listen      string
	dial        string
	dialCA      string
	dialName    string
	jobID       string
	socketName  string
	daemonUser  string
	config      string
	egress      string
	egressPort  int
	idleTimeout time.Duration
	stopTimeout time.Duration
	maxLine     int
	maxInFlight int
	logFormat   string
	logLevel    string
	showVersion bool
}

func parse(args []string, stdout, stderr io.Writer) (*options, int) {
	o := &options{}
	fs := flag.NewFlagSet("agor-executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.root, "root", os.Getenv("HOME"), "directory every file, exec and watch path resolves beneath (default: $HOME, which User= sets)")
	fs.StringVar(&o.agents, "agents", task.DefaultAgentsPath, "agent CLI settings `file` (binary and environment per agentic tool; missing: each CLI by name on PATH); read again at the next prompt when it changes")
	fs.StringVar(&o.listen, "listen", "", "listen on this Unix socket `path` (made 0660) instead of the socket systemd passes")
	fs.StringVar(&o.dial, "dial", "", "dial the daemon at this `host:port` over TLS 1.3 instead of listening (an executor started as a Slurm job on a compute node, where nothing may connect to it); the job's token is the first line of standard input, never an argument or the environment")
	fs.StringVar(&o.dialCA, "dial-ca", "", "PEM `file` of the CA that certified the daemon's dial-back listener: the only CA trusted with --dial")
	fs.StringVar(&o.dialName, "dial-name", "", "the `name` the daemon's certificate must carry with --dial (default: the host of --dial)")
	fs.StringVar(&o.jobID, "job-id", os.Getenv("SLURM_JOB_ID"), "with --dial: the `id` of the job this executor runs in, which its token is bound to (default: $SLURM_JOB_ID)")
	fs.StringVar(&o.socketName, "socket-name", "executor", "`name` of the activated socket (FileDescriptorName= of the .socket unit)")
	fs.StringVar(&o.daemonUser, "daemon-user", "agor", "the one non-root `user` (name or uid) served, with root; nobody else, not even its group")
	fs.StringVar(&o.config, "config", config.DefaultPath, "the daemon's configuration `file`, root-owned, whose min_uid, allowed_users and allowed_groups the executor applies to its own account (missing: the defaults, min_uid 1000)")
	fs.StringVar(&o.egress, "egress-socket", "", "under network mode proxy: relay a loopback HTTP proxy port to the daemon's egress service at this Unix socket `path`, and point agents, commands and terminals at it (HTTPS_PROXY, HTTP_PROXY); served only inside a network namespace of the executor's own (PrivateNetwork=yes; agorctl network apply writes both)")
	fs.IntVar(&o.egressPort, "egress-port", 3128, "the loopback `port` of the proxy served with --egress-socket")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 60*time.Second, "exit after this `duration` with no connection and nothing running; 0 never exits")
	fs.DurationVar(&o.stopTimeout, "stop-timeout", 10*time.Second, "on SIGTERM, how long running requests may finish before they are cancelled")
	fs.IntVar(&o.maxLine, "max-line", rpc.DefaultMaxLine, "longest JSON-RPC message in `bytes`; longer ones are refused, the connection lives on")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 64, "requests handled at once per connection; more are refused with the limit error")
	fs.StringVar(&o.logFormat, "log-format", "auto", "auto (journal when stderr is a journal stream), journal, or text")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() { usage(stdout, fs) }
	if err := flagenv.Apply(fs, envPrefix); err != nil {
		fmt.Fprintln(stderr, "agor-executor:", err)
		return nil, exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK
		}
		return nil, exitUsage
	}
	fs.Visit(func(f *flag.Flag) { o.rootGiven = o.rootGiven || f.Name == "root" })
	if _, ok := os.LookupEnv(flagenv.Name(envPrefix, "root")); ok {
		o.rootGiven = true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agor-executor: unexpected argument %q (see --help)\n", fs.Arg(0))
		return nil, exitUsage
	}
	return o, -1
}

const envPrefix = "AGOR_EXECUTOR"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parse(args, stdout, stderr)
	if o == nil {
		return code
	}
	if o.showVersion {
		fmt.Fprintln(stdout, "agor-executor", version.Version)
		return exitOK
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "agor-executor:", err)
		return exitUsage
	}
	if os.Geteuid() == 0 {
		log.Error("refusing to run as root: an executor runs as the user it serves (agor-executor@USER with User=%I)")
		return exitUsage
	}
	policy, code, ok := checkSelf(ctx, o, log)
	if !ok {
		return code
	}
	cfg, err := serverConfig(ctx, o, log)
	if err != nil {
		log.Error(err.Error())
		return exitUsage
	}
	applyLoginUmask(ctx, log)
	agents, err := task.OpenAgents(o.agents, log)
	if err != nil {
		log.Error(err.Error())
		return exitUsage
	}
	root, err := openRoot(o.root)
	if err != nil && o.rootGiven {
		log.Error(err.Error())
		return exitUsage
	}
	if err != nil {
		// An account without a home still gets an executor (ping, and
		// later agents): only the file and exec methods are off.
		log.Warn("file and exec methods disabled", "err", err)
	} else {
		defer root.Close()
	}
	ln, err := listener(o)
	if err != nil {
		log.Error(err.Error())
		return exitFailure
	}
	stopRelay := startEgress(ctx, o, log)
	defer stopRelay()
	return serve(ctx, cfg, root, agents, sandboxPolicy(policy, log), task.WarmLimitsOf(policy.Agents), ln, log)
}

// startEgress serves the proxy port of --egress-socket, and sets the
// proxy variables every child inherits. Outside a private network
// namespace it refuses (others could use the port as this person): the
// executor then has no way out, and the daemon refuses to serve a person
// under proxy whose unit lacks PrivateNetwork=yes anyway.
func startEgress(ctx context.Context, o *options, log *slog.Logger) func() {
	if o.egress == "" {
		return func() {}
	}
	if err := egress.CheckPrivate(); err != nil {
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.egressPort)))
	if err != nil {
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	if err := egress.SetEnv(o.egressPort); err != nil {
		ln.Close()
		log.Error("egress proxy not served", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := &egress.Relay{Socket: o.egress, Log: log}
		if err := r.Serve(ctx, ln); err != nil {
			log.Error("egress relay stopped", "err", err)
		}
	}()
	log.Info("egress proxy served", "address", ln.Addr().String(), "egress_socket", o.egress)
	return func() { cancel(); <-done }
}

func openRoot(dir string) (*fsroot.Root, error) {
	if dir == "" {
		return nil, errors.New("no --root and no $HOME: name the directory file and exec paths resolve beneath")
	}
	return fsroot.Open(dir)
}

func newLogger(o *options, stderr io.Writer) (*slog.Logger, error) {
	f, err := logging.ParseFormat(o.logFormat)
	if err != nil {
		return nil, err
	}
	lvl, err := logging.ParseLevel(o.logLevel)
	if err != nil {
		return nil, err
	}
	return logging.New("agor-executor", f, lvl, stderr).With("user", currentUser()), nil
}

// checkSelf refuses to serve when the configuration does not allow this
// account an executor: the reason goes to the journal, and connections
// already waiting are closed at once rather than left to time out.
func checkSelf(ctx context.Context, o *options, log *slog.Logger) (config.Config, int, bool) {
	c, err := config.Load(o.config)
	if err != nil {
		log.Error("cannot read the execution policy; refusing to serve", "err", err)
		return c, exitUsage, false
	}
	err = executor.CheckSelf(ctx, identity.Default(), uint32(os.Getuid()), c.Execution)
	if err == nil {
		return c, 0, true
	}
	log.Error("refusing to serve: "+err.Error(), "config", o.config)
	if o.dial == "" {
		if ln, lerr := listener(o); lerr == nil {
			refuseWaiting(ln.(*net.UnixListener))
		}
	}
	return c, exitRefused, false
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
	p.Self, p.TempDir = self, os.TempDir()
	log.Debug("sandbox", "default", p.Default, "allowed", p.Allowed, "required", p.Required, "landlock_abi", sandbox.ABI())
	return p
}

// refuseWaiting closes the connections queued on ln, until none arrives
// for a moment; the listening socket itself stays systemd's.
func refuseWaiting(ln *net.UnixListener) {
	for {
		_ = ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func serverConfig(ctx context.Context, o *options, log *slog.Logger) (executor.Config, error) {
	var pol peer.Policy
	if o.dial == "" {
		// A dialled executor has no peers to check (the daemon proved
		// itself with the pinned CA), and a compute node need not know
		// the daemon's account.
		var err error
		if pol, err = executor.PolicyFor(ctx, o.daemonUser); err != nil {
			return executor.Config{}, err
		}
	}
	return executor.Config{
		Policy:      pol,
		IdleTimeout: o.idleTimeout,
		StopTimeout: o.stopTimeout,
		RPC:         rpc.Options{MaxLine: o.maxLine, MaxInFlight: o.maxInFlight},
		Logger:      log,
		Notifier:    sdNotifier{log: log},
	}, nil
}

func listener(o *options) (executor.Listener, error) {
	if o.dial != "" {
		return dialListener(o, os.Stdin)
	}
	if o.listen != "" {
		return unixsock.Listen(o.listen)
	}
	return executor.Activated(o.socketName)
}

func serve(ctx context.Context, cfg executor.Config, root *fsroot.Root, agents *task.AgentsFile, box *sandbox.Policy, warm task.WarmLimits, ln executor.Listener, log *slog.Logger) int {
	srv := executor.NewServer(cfg)
	closePrimitives := registerPrimitives(srv, root, agents, box, warm, log)
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
	case err == nil, errors.Is(err, executor.ErrIdle):
		log.Info("exited")
		return exitOK
	default:
		log.Error("serve failed", "err", err)
		return exitFailure
	}
}

type sdNotifier struct{ log *slog.Logger }

// Notify sends state; not running under systemd is normal and silent.
func (n sdNotifier) Notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Debug("sd_notify failed", "err", err)
	}
}

func currentUser() string { return executor.CurrentUser() }

// stopOnNotice: SIGUSR1 is Slurm's notice that the job nears its time
// limit (sbatch --signal=B:USR1@...). Stop as on SIGTERM while there is
// time to let running work finish; the session resumes in the next job.
func stopOnNotice(srv *executor.Server, log *slog.Logger) {
	notice := make(chan os.Signal, 1)
	signal.Notify(notice, syscall.SIGUSR1)
	go func() {
		<-notice
		log.Warn("the job nears its time limit (SIGUSR1): stopping; running work may finish")
		srv.Stop("time limit")
	}()
}
