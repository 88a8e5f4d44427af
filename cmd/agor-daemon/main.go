// Command agor-daemon manages per-user executors through systemd (or
// directly) and serves the client API on a Unix socket.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon"
	"github.com/agor-sh/agor/internal/daemon/credstore"
	"github.com/agor-sh/agor/internal/flagenv"
	"github.com/agor-sh/agor/internal/logging"
	"github.com/agor-sh/agor/internal/unixsock"
	"github.com/agor-sh/agor/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop) // a second signal kills
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	config, listen, executor, executorRoot, executorAgents, masterKey, logFormat, logLevel string
	showVersion                                                                            bool
}

const usageText = `NAME
    agor-daemon - manage per-user agor executors and serve the client API

SYNOPSIS
    agor-daemon [--config FILE] [--listen PATH] [--executor PATH]

DESCRIPTION
    Runs as the agor user (agor-daemon.service). Brings up a user's executor on
    first use: with execution.backend systemd it starts agor-executor@USER.socket
    over D-Bus, which the polkit rule allows the agor user and nothing more; with
    backend direct it starts the executor itself. It serves HTTP and JSON on the
    socket systemd passes (agor-daemon.socket, FileDescriptorName=api) or on
    --listen, and knows every caller by SO_PEERCRED: users act as themselves,
    root and the admin group (api.admin_group) for anyone. On start it reattaches
    to executors that kept running. READY=1 is sent once all of that is up.

OPTIONS
`

func parse(args []string, stdout, stderr io.Writer) (*options, int) {
	o := &options{}
	fs := flag.NewFlagSet("agor-daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", config.DefaultPath, "configuration `file`; missing means defaults")
	fs.StringVar(&o.listen, "listen", "", "serve the API on this Unix socket `path` instead of the activated one (default: api.socket_path)")
	fs.StringVar(&o.executor, "executor", "/usr/libexec/agor/agor-executor", "agor-executor `path`, for backend direct")
	fs.StringVar(&o.executorRoot, "executor-root", "", "for backend direct: executors work beneath this `directory` (default: each user's home)")
	fs.StringVar(&o.executorAgents, "executor-agents", "", "for backend direct: the executors' agent settings `file` (default: theirs, /etc/agor/agents.yaml)")
	fs.StringVar(&o.masterKey, "master-key", "", "credential store key `file`, made if missing, for running off systemd (default: the master-key credential from $CREDENTIALS_DIRECTORY)")
	fs.StringVar(&o.logFormat, "log-format", "auto", "auto, journal or text")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(stdout, usageText)
		fs.VisitAll(func(f *flag.Flag) {
			name, text := flag.UnquoteUsage(f)
			fmt.Fprintf(stdout, "    --%s %s\n        %s (default %q; environment %s)\n", f.Name, name, text, f.DefValue, flagenv.Name("AGOR_DAEMON", f.Name))
		})
	}
	if err := flagenv.Apply(fs, "AGOR_DAEMON"); err != nil {
		fmt.Fprintln(stderr, "agor-daemon:", err)
		return nil, 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	return o, -1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parse(args, stdout, stderr)
	if o == nil {
		return code
	}
	if o.showVersion {
		fmt.Fprintln(stdout, "agor-daemon", version.Version)
		return 0
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "agor-daemon:", err)
		return 2
	}
	cfg, err := config.Load(o.config)
	if err != nil {
		log.Error(err.Error())
		return 2
	}
	if err := serve(ctx, o, cfg, log); err != nil {
		log.Error(err.Error())
		return 1
	}
	return 0
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
	return logging.New("agor-daemon", f, lvl, stderr), nil
}

// masterKey comes from systemd's credential (LoadCredential=master-key)
// or, off systemd, from --master-key, made on first use.
func masterKey(path string) ([]byte, error) {
	if path == "" {
		return credstore.LoadMasterKey("master-key")
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := credstore.GenerateMasterKey(path); err != nil {
			return nil, err
		}
	}
	return credstore.ReadMasterKey(path)
}

func serve(ctx context.Context, o *options, cfg config.Config, log *slog.Logger) error {
	key, err := masterKey(o.masterKey)
	if err != nil {
		return err
	}
	ls, err := listeners(o.listen, cfg, log)
	if err != nil {
		return err
	}
	d, err := daemon.New(daemon.Options{Config: cfg, ConfigPath: o.config, Executor: o.executor, Root: o.executorRoot, Agents: o.executorAgents,
		MasterKey: key, Listener: ls.api, Egress: ls.egress, Gateway: ls.gateway, Log: log})
	if err != nil {
		ls.close()
		return err
	}
	return d.Run(ctx)
}

// sockets are the daemon's listeners: the API's, and (nil when not
// served) the egress service's and the model gateway's.
type sockets struct{ api, egress, gateway net.Listener }

func (s sockets) close() {
	for _, l := range []net.Listener{s.api, s.egress, s.gateway} {
		if l != nil {
			l.Close()
		}
	}
}

// listeners are the API's socket, the egress service's and the model
// gateway's. systemd passes all from agor-daemon.socket
// (FileDescriptorName=api); the others are told apart by their paths,
// network.socket_path and gateway.socket_path. Off systemd the daemon
// listens itself: the API on --listen or api.socket_path, the egress
// service only when someone may be under network mode proxy, the gateway
// when it is enabled (nil when one cannot be: nobody under proxy then
// gets out; no task reaches a model).
func listeners(flagPath string, cfg config.Config, log *slog.Logger) (ls sockets, err error) {
	var activated []net.Listener
	if flagPath == "" {
		byName, err := activation.ListenersWithNames()
		if err != nil {
			return ls, fmt.Errorf("activated sockets: %w", err)
		}
		activated = byName["api"]
	}
	for _, l := range activated {
		switch {
		case l.Addr().String() == cfg.Network.SocketPath:
			ls.egress = l
		case l.Addr().String() == cfg.Gateway.SocketPath:
			ls.gateway = l
		case ls.api == nil:
			ls.api = l
		}
	}
	if ls.api == nil {
		if flagPath == "" {
			flagPath = cfg.API.SocketPath
		}
		if ls.api, err = listenPublic(flagPath); err != nil {
			return ls, err
		}
	}
	ls.egress = listenIf(ls.egress, mayProxy(cfg.Network), cfg.Network.SocketPath, "the egress service is not served: nobody under network mode proxy gets out", log)
	ls.gateway = listenIf(ls.gateway, cfg.Gateway.Enabled, cfg.Gateway.SocketPath, "the model gateway is not served: no task reaches a model", log)
	return ls, nil
}

// listenIf is l, or when it is nil and wanted, a listener of its own on
// path (nil, with warning logged, if that fails).
func listenIf(l net.Listener, wanted bool, path, warning string, log *slog.Logger) net.Listener {
	if l != nil || !wanted {
		return l
	}
	l, err := listenPublic(path)
	if err != nil {
		log.Warn(warning, "err", err)
		return nil
	}
	return l
}

func mayProxy(n config.Network) bool {
	if n.Default.Mode == config.NetworkProxy {
		return true
	}
	for _, g := range n.Groups {
		if g.Mode == config.NetworkProxy {
			return true
		}
	}
	for _, u := range n.Users {
		if u.Mode == config.NetworkProxy {
			return true
		}
	}
	return false
}

// listenPublic listens on path, mode 0666: access is decided per
// connection by SO_PEERCRED.
func listenPublic(path string) (net.Listener, error) {
	ln, err := unixsock.Listen(path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
