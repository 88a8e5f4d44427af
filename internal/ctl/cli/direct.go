package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/executorunit"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// backendFlags choose how executors are managed without the daemon.
type backendFlags struct {
	config  string
	backend string
	binary  string
	timeout time.Duration
}

// register adds the backend's flags; withTimeout adds its own --timeout
// (30s) where no daemon's --timeout is there already.
func (b *backendFlags) register(c *cobra.Command, withTimeout bool) {
	c.Flags().StringVar(&b.config, "config", config.DefaultPath, "daemon configuration `file` (execution: section)")
	c.Flags().StringVar(&b.backend, "backend", "", "systemd or direct (default: the configuration's execution.backend)")
	c.Flags().StringVar(&b.binary, "executor", "/usr/libexec/agor/agor-executor", "agor-executor `path`, for the direct backend")
	b.timeout = 30 * time.Second
	if withTimeout {
		c.Flags().DurationVar(&b.timeout, "timeout", 30*time.Second, "give up after this `duration` (exit 124)")
	}
}

// open returns the backend the flags and the configuration name; a bad
// configuration or backend name is a usage error.
func (b *backendFlags) open() (executorunit.Backend, func(), error) {
	cfg, err := config.Load(b.config)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	e := cfg.Execution
	pol := executorunit.Policy{MinUID: e.MinUID, AllowedUsers: e.AllowedUsers, AllowedGroups: e.AllowedGroups, SocketTemplate: e.SocketPathTemplate}
	kind := e.Backend
	if b.backend != "" {
		kind = b.backend
	}
	switch kind {
	case "systemd":
		s := &executorunit.Systemd{Policy: pol}
		return s, s.Close, nil
	case "direct":
		d := &executorunit.Direct{Policy: pol, Binary: b.binary}
		return d, func() {}, nil // executors outlive this command until idle
	}
	return nil, nil, usageErrorf("unknown backend %q (want systemd or direct)", kind)
}

func newExecutorsEnsure(a *app) *cobra.Command {
	var b backendFlags
	c := &cobra.Command{
		Use:   "ensure USER...",
		Short: "bring up users' executors over D-Bus, as the daemon does, and ping them",
		Long: `Bring up each USER's executor, all at once, the way the daemon does, without
the daemon: check the user against the configuration (an existing account,
not root, uid >= min_uid, allowed users and groups), start
agor-executor@USER.socket over D-Bus (backend systemd, allowed for user agor
by the polkit rule) or start the executor itself (backend direct), then ping
it. Prints "USER {ping reply}" for each; exits 1 if any failed. Run it as
agor (or root).`,
		Example: `  sudo -u agor agorctl executors ensure alice bob
  agorctl executors ensure --backend direct --executor bin/agor-executor "$USER"`,
		Args:              atLeast(1, "at least one USER"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, users []string) error {
			return ensureDirect(cmd.Context(), a, &b, users)
		},
	}
	b.register(c, true)
	return c
}

// ensureDirect brings up each user's executor (concurrently) and pings it.
func ensureDirect(ctx context.Context, a *app, b *backendFlags, users []string) error {
	return b.with(ctx, func(ctx, parent context.Context, be executorunit.Backend) error {
		return ensureAll(ctx, parent, a, be, users)
	})
}

func ensureAll(ctx, parent context.Context, a *app, be executorunit.Backend, users []string) error {
	results := make([]string, len(users))
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = ensureOne(ctx, be, u)
		}()
	}
	wg.Wait()
	for i, u := range users {
		if errs[i] != nil {
			fmt.Fprintf(a.stderr, "%s: %v\n", u, errs[i])
			continue
		}
		fmt.Fprintf(a.stdout, "%s %s\n", u, results[i])
	}
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: exitCode(parent, err)}
	}
	return nil
}

func ensureOne(ctx context.Context, be executorunit.Backend, user string) (string, error) {
	ex, err := be.Ensure(ctx, user)
	if err != nil {
		return "", err
	}
	res, err := ping(ctx, ex.Socket)
	if err != nil {
		return "", err
	}
	return string(res), nil
}

func stopDirect(ctx context.Context, a *app, b *backendFlags, users []string) error {
	return b.with(ctx, func(ctx, parent context.Context, be executorunit.Backend) error {
		return stopAll(ctx, parent, a, be, users)
	})
}

func stopAll(ctx, parent context.Context, a *app, be executorunit.Backend, users []string) error {
	var failed error
	for _, u := range users {
		if err := be.Stop(ctx, u); err != nil {
			fmt.Fprintf(a.stderr, "%s: %v\n", u, err)
			failed = err
			continue
		}
		fmt.Fprintf(a.stdout, "%s: stopped\n", u)
	}
	if failed != nil {
		return &exitError{code: exitCode(parent, failed)}
	}
	return nil
}

// with opens the backend and runs f with ctx bounded by --timeout; parent
// is the command's own context, for the exit status of an interruption.
func (b *backendFlags) with(ctx context.Context, f func(ctx, parent context.Context, be executorunit.Backend) error) error {
	be, closeBe, err := b.open()
	if err != nil {
		return err
	}
	defer closeBe()
	tctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	return f(tctx, ctx, be)
}

func listDirect(ctx context.Context, a *app, b *backendFlags, jsonOut bool) error {
	var list []executorunit.Status
	err := b.with(ctx, func(ctx, _ context.Context, be executorunit.Backend) (err error) {
		list, err = be.List(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if jsonOut {
		enc := json.NewEncoder(a.stdout)
		for _, st := range list {
			_ = enc.Encode(st)
		}
		return nil
	}
	fmt.Fprintf(a.stdout, "%-20s %-10s %s\n", "USER", "SOCKET", "SERVICE")
	for _, st := range list {
		fmt.Fprintf(a.stdout, "%-20s %-10s %s\n", st.User, st.Socket, st.Service)
	}
	return nil
}

func newExecutorsPing(a *app) *cobra.Command {
	var socket string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "ping --socket PATH",
		Short: "ping an executor's socket directly and print its reply",
		Long: `Connect to an executor's socket as this process's user, send "ping", and
print its reply (pid, uid, user, version, uptime) as JSON. Only root and the
daemon's account are served, so run it as one of those. Under systemd the
first connection starts the user's executor (agor-executor@USER.socket).`,
		Example: `  sudo -u agor agorctl executors ping --socket /run/agor/executors/alice.sock
  agorctl executors ping --socket /tmp/exec.sock --timeout 2s`,
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" {
				return usageErrorf("--socket is required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			res, err := ping(ctx, socket)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, string(res))
			return nil
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "the executor's Unix socket `path`, e.g. /run/agor/executors/alice.sock")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this `duration` (exit 124)")
	return c
}

func ping(ctx context.Context, socket string) (json.RawMessage, error) {
	c, err := rpc.Dial(ctx, socket, nil, rpc.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var res json.RawMessage
	if err := c.Call(ctx, protocol.MethodPing, struct{}{}, &res); err != nil {
		if errors.Is(err, rpc.ErrClosed) {
			return nil, fmt.Errorf("%s closed the connection (is this user allowed? only root and the daemon's account are served): %w", socket, err)
		}
		return nil, err
	}
	return res, nil
}

// newLegacyExecutor is the old "agorctl executor ping|ensure|stop|list",
// which reached executors without the daemon: hidden, kept because the
// 0.1 package's man page and scripts used it.
func newLegacyExecutor(a *app) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "executors list --no-daemon",
		Long:  "The old spelling of agorctl executors list --no-daemon.",
		Args:  noOperands,
	}
	var b backendFlags
	var jsonOut bool
	b.register(list, true)
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON lines")
	list.RunE = func(cmd *cobra.Command, _ []string) error { return listDirect(cmd.Context(), a, &b, jsonOut) }
	c := &cobra.Command{
		Use:    "executor",
		Short:  "old spelling of executors ping|ensure|stop --no-daemon|list --no-daemon",
		Long:   "The old spelling of agorctl executors ping, ensure, stop --no-daemon and list --no-daemon.",
		Hidden: true,
	}
	group(c, nil)
	c.AddCommand(newExecutorsPing(a), newExecutorsEnsure(a), newExecutorsStop(a, true), list)
	return c
}
