package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

const executorsLong = `List executors, start and stop them through the daemon, or, without the
daemon, bring them up, stop and list them straight over systemd's D-Bus API
(or the direct backend) the way the daemon does, and ping one's socket.

Each user's executor is agor-executor@USER.socket / .service, socket-activated
on /run/agor/executors/USER.sock.

` + daemonHelp

func newExecutors(a *app) *cobra.Command {
	list := newExecutorsList(a)
	c := &cobra.Command{
		Use:   "executors",
		Short: "list, start, stop, ensure and ping users' executors",
		Long:  executorsLong + "\n\nWith no command, lists them (as executors list).",
		Example: `  agorctl executors
  agorctl executors start alice bob
  sudo -u agor agorctl executors ensure alice
  sudo -u agor agorctl executors ping --socket /run/agor/executors/alice.sock`,
		Args:              noOperands,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	// "agorctl executors [FLAGS]" is "agorctl executors list [FLAGS]".
	var lf listFlags
	lf.register(c)
	group(c, func(cmd *cobra.Command, _ []string) error { return lf.run(cmd.Context(), a) })
	c.AddCommand(list, newExecutorsStart(a), newExecutorsStop(a, false),
		newExecutorsEnsure(a), newExecutorsPing(a))
	return c
}

// listFlags are executors list's: the daemon's, or a backend's with
// --no-daemon.
type listFlags struct {
	api      apiFlags
	backend  backendFlags
	noDaemon bool
	jsonOut  bool
}

func (f *listFlags) register(c *cobra.Command) {
	addAPIFlags(c, &f.api)
	f.backend.register(c, false)
	c.Flags().BoolVar(&f.noDaemon, "no-daemon", false, "ask systemd (or the direct backend) instead of the daemon, as the daemon would")
	c.Flags().BoolVar(&f.jsonOut, "json", false, "print JSON: the daemon's reply as it is (with --no-daemon one object a line)")
}

func (f *listFlags) run(ctx context.Context, a *app) error {
	if f.noDaemon {
		f.backend.timeout = f.api.timeout
		return listDirect(ctx, a, &f.backend, f.jsonOut)
	}
	c, ctx, cancel := f.api.client(ctx)
	defer cancel()
	list, raw, err := c.Executors(ctx)
	if err != nil {
		return err
	}
	if f.jsonOut {
		fmt.Fprintln(a.stdout, string(raw))
		return nil
	}
	printExecutors(a, list)
	return nil
}

func newExecutorsList(a *app) *cobra.Command {
	var f listFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "list executors with their socket and service state",
		Long: `List executors with their socket and service unit state. Through the daemon
(admins see everyone's, a person only her own) a table says which ones the
daemon is connected to and what each running one uses: CPU time since its
unit started, memory and tasks now, from systemd's counters for
agor-executor@USER.service (the direct backend: the executor's processes in
/proc). "-" is a number not known here; a note on stderr says why. --json
prints the daemon's reply (usage in nanoseconds and bytes, null where
unknown). With --no-daemon the units are listed straight from systemd, one
"USER SOCKET SERVICE" line each (--json: one JSON object a line).

` + daemonHelp,
		Example: `  agorctl executors list
  sudo -u agor agorctl executors list --no-daemon`,
		Args: noOperands,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd.Context(), a) },
	}
	f.register(c)
	return c
}

func newExecutorsStart(a *app) *cobra.Command {
	var f apiFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "start [USER...]",
		Short: "start your executor (or USERs') through the daemon",
		Long: `Start each USER's executor (yours, naming none) through the daemon, all at
once, and say for each who it runs as, its pid, how long it has been up and
its version, from a ping made now (an executor already running is pinged
again). --json prints the daemon's replies instead, one JSON object a line.
The daemon checks the user against its configuration (an existing account,
not root, not a special account such as nobody, uid >= min_uid, allowed
users and groups) and starts agor-executor@USER.socket over D-Bus. Users may
start their own; root and admins anyone's. Exits 1 if any failed.

` + daemonHelp,
		Example: `  agorctl executors start
  agorctl executors start alice bob
  agorctl executors start alice --json`,
		ValidArgsFunction: completeUsers(&f),
		RunE: func(cmd *cobra.Command, users []string) error {
			users, err := orSelf(cmd.Context(), users, "agorctl executors start alice")
			if err != nil {
				return err
			}
			return forEachUser(cmd.Context(), a, &f, "start", users, asJSON)
		},
	}
	addAPIFlags(c, &f)
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's replies, one JSON object a line")
	return c
}

// newExecutorsStop is executors stop; direct (the old "executor stop")
// always stops the units itself.
func newExecutorsStop(a *app, direct bool) *cobra.Command {
	var f apiFlags
	var b backendFlags
	var noDaemon, asJSON bool
	c := &cobra.Command{
		Use:   "stop [USER...]",
		Short: "stop your executor (or USERs'): socket and service",
		Long: `Stop each USER's executor socket and service (yours, naming none; with
--no-daemon name them), ending its work (tasks, warm agents, terminals):
through the daemon, or with --no-daemon straight over systemd's D-Bus API
(or the direct backend); "USER: stopped" for each. Through the daemon a
person may stop her own executor, root and admins anyone's (with a shared
executor account, admins only). The next use starts it afresh. Exits 1 if
any failed.

` + daemonHelp,
		Example: `  agorctl executors stop
  agorctl executors stop alice
  sudo -u agor agorctl executors stop --no-daemon alice`,
		ValidArgsFunction: completeUsers(&f),
		RunE: func(cmd *cobra.Command, users []string) error {
			if (noDaemon || direct) && len(users) == 0 {
				return usageErrorf("want at least one USER with --no-daemon")
			}
			users, err := orSelf(cmd.Context(), users, "agorctl executors stop alice")
			if err != nil {
				return err
			}
			if noDaemon || direct {
				if !direct {
					b.timeout = f.timeout
				}
				return stopDirect(cmd.Context(), a, &b, users)
			}
			return forEachUser(cmd.Context(), a, &f, "stop", users, asJSON)
		},
	}
	if direct {
		b.register(c, true)
		return c
	}
	addAPIFlags(c, &f)
	b.register(c, false)
	c.Flags().BoolVar(&noDaemon, "no-daemon", false, "stop the units over D-Bus (or the direct backend) instead of through the daemon")
	c.Flags().BoolVar(&asJSON, "json", false, "print the daemon's replies, one JSON object a line")
	return c
}

// orSelf is users, or the caller when none is named.
func orSelf(ctx context.Context, users []string, example string) ([]string, error) {
	if len(users) > 0 {
		return users, nil
	}
	w, err := self(ctx)
	if err == nil {
		err = notRoot(w, example)
	}
	return []string{w.name}, err
}

// forEachUser starts or stops every user's executor through the daemon at
// once, printing a line for each (the daemon's reply with asJSON); it
// fails if any did.
func forEachUser(ctx context.Context, a *app, f *apiFlags, verb string, users []string, asJSON bool) error {
	parent := ctx
	c, ctx, cancel := f.client(ctx)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed error
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var info apiwire.ExecutorInfo
			var out json.RawMessage
			var err error
			if verb == "stop" {
				_, out, err = c.StopExecutor(ctx, u)
			} else {
				info, out, err = c.StartExecutor(ctx, u)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				fmt.Fprintf(a.stderr, "agorctl executors %s %s: %v\n", verb, u, err)
				failed = err
			case asJSON:
				fmt.Fprintf(a.stdout, "%s\n", out)
			case verb == "stop":
				fmt.Fprintf(a.stdout, "%s: stopped\n", u)
			default:
				fmt.Fprintln(a.stdout, startedLine(u, info))
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return &exitError{code: exitCode(parent, failed)}
	}
	return nil
}

// startedLine says of a started executor who it runs as, since when, and
// when it answered, from the daemon's reply.
func startedLine(user string, info apiwire.ExecutorInfo) string {
	if info.Ping == nil {
		return user + ": running"
	}
	p := info.Ping
	up := (time.Duration(p.UptimeMS) * time.Millisecond).Round(100 * time.Millisecond)
	return fmt.Sprintf("%s: running as %s (uid %d), pid %d, up %s, agor-executor %s; answered at %s",
		user, p.User, p.UID, p.PID, up, p.Version, time.UnixMilli(p.Timestamp).Format("15:04:05.000"))
}
