// Command agorctl is the command line of agor's operators and users.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/protocol"
	"github.com/agor-sh/agor/internal/rpc"
	"github.com/agor-sh/agor/internal/version"
)

const manual = `NAME
    agorctl - command line for agor, the per-user AI agent and terminal service

SYNOPSIS
    agorctl executor ping --socket PATH [--timeout DURATION]
    agorctl executor ensure [OPTIONS] USER...
    agorctl executor stop [OPTIONS] USER...
    agorctl executor list [OPTIONS] [--json]
    agorctl executors [list] | start USER... | stop USER...   [--api PATH]
    agorctl exec [--cwd DIR] [--limit D] USER -- COMMAND [ARG...]
    agorctl prompt [--tool T] [--cwd DIR] [--mode M] [--model M] [--session ID] [--limit D] [--json] [--detach] USER PROMPT...
    agorctl sessions [--user U] [--json]
    agorctl tasks SESSION [--json]
    agorctl events [--follow] [--after N] TASK
    agorctl stop TASK
    agorctl terminal [--cwd DIR] [--shell PATH] [--attach ID] [USER]
    agorctl creds set|delete NAME [--daemon]
    agorctl permissions [list] | approve ID | deny ID [--reason R]
    agorctl audit [--user U] [--action A] [--task T] [--limit N]
    agorctl doctor [--json] [--config FILE] [--api PATH]
    agorctl api-token new USER
    agorctl completion bash
    agorctl version

COMMANDS
    executor ping    Connect to an executor's socket as this process's user, send
                     "ping", and print its reply (pid, uid, user, version, uptime)
                     as JSON. Only root and the daemon's account are served, so run
                     it as one of those. Under systemd the first connection starts
                     the user's executor (agor-executor@USER.socket).
    executor ensure  Bring up each USER's executor, all at once, the way the daemon
                     does: check the user against the configuration (an existing
                     account, not root, uid >= min_uid, allowed users/groups), start
                     agor-executor@USER.socket over D-Bus (backend systemd, allowed
                     for user agor by the polkit rule) or start the executor itself
                     (backend direct), then ping it. Prints "USER {ping reply}".
    executor stop    Stop each USER's executor socket and service.
    executor list    List executors with their socket and service state.
    doctor           Check the installation as an operator would: units present and
                     verified, agor-daemon active and answering, the system bus, the
                     polkit rule present and in effect (asked of polkit; as root),
                     the agor account, socket directories, configuration, master key
                     and the executor's exposure score. One "ok|FAIL|warn NAME DETAIL"
                     line each, a "fix:" line under each FAIL; --json for a JSON
                     array. Exits 1 if any check failed. Run it as root for all checks.
    api-token new    Make a bearer token acting as USER for the daemon's TCP API
                     (api.tcp_address, off by default); only its hash is kept, in
                     api.tokens_file. Run as root.
    completion bash  Print a bash completion script (installed by the package; by hand:
                     source <(agorctl completion bash)).
    version          Print agorctl's version.

  Through the daemon (agor-daemon's API socket, /run/agor/daemon.sock; the
  daemon knows you by your Unix account: you act as yourself, root and
  members of the admin group for anyone):
    executors        List executors with their unit state (admins), or start and
                     stop USERs' executors through the daemon; start prints
                     "USER {ping reply}".
    exec             Run COMMAND (no shell) as USER in their executor, in --cwd
                     beneath their home; prints its output and exits with its status.
    prompt           Run one turn of an agent CLI (--tool claude-code, codex, gemini or
                     opencode) as USER in their executor and show its events as they
                     come: text, tool calls and results, permission questions (asked
                     here on a terminal, else answer with agorctl permissions), then a
                     summary with token usage. --session continues an earlier session
                     (the agent resumes its own). Exits 0 completed, 1 failed, 124
                     timeout, 130 cancelled. --detach returns at once with the task's
                     id; the task runs on in the daemon.
    sessions         List sessions (yours; admins: everyone's, or --user's).
    tasks            List a session's tasks with their status.
    events           Print a task's stored events as JSON lines; --follow keeps
                     printing new ones until the task ends, resuming by sequence
                     number if the connection drops, so none is lost or repeated.
    stop             Stop a running task: its agent is killed, its status becomes
                     cancelled.
    terminal         Open a shell as USER (default: you) on a terminal in their
                     executor and attach this terminal to it, in raw mode; the window
                     size follows yours (SIGWINCH). Ctrl-] detaches and leaves the
                     shell running (for 5 minutes unattached); --attach ID comes
                     back to it with its recent output. Exits with the shell's status.
    creds set        Store an API key (e.g. ANTHROPIC_API_KEY), read from standard
                     input so it never appears in ps or history; encrypted at rest,
                     never shown again. --daemon sets the key every user falls back to.
    creds delete     Remove one.
    permissions      List agents' open permission requests; approve or deny one.
    audit            Print the audit trail as JSON lines: executors started and
                     stopped, keys handed out (never their values), permission
                     decisions, throttling. Users see their own records.

OPTIONS of the daemon commands
    --api PATH        the daemon's socket (default /run/agor/daemon.sock; environment AGOR_SOCKET)
    --timeout D       give up after D (default 60s)

OPTIONS of executor ensure, stop and list
    --config FILE     daemon configuration (default /etc/agor/config.yaml; missing: defaults)
    --backend NAME    systemd or direct (default: the configuration's execution.backend)
    --executor PATH   agor-executor, for the direct backend (default /usr/libexec/agor/agor-executor)
    --timeout D       give up after D (default 30s)

EXIT STATUS
    0 success; 1 the operation failed (refused, closed, timed out); 2 usage error.
    exec exits with the command's own status (128+9 when it was killed).

EXAMPLES
    agorctl executors start alice
    agorctl exec alice -- id -un
    printf '%s\n' "$KEY" | agorctl creds set ANTHROPIC_API_KEY
    agorctl audit --action api_key_issued
    sudo -u agor agorctl executor ping --socket /run/agor/executors/alice.sock
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		io.WriteString(stdout, manual)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch {
	case args[0] == "api-token":
		return apiTokenCmd(args[1:], stdout, stderr)
	case args[0] == "completion":
		return completionCmd(args[1:], stdout, stderr)
	case args[0] == "version":
		fmt.Fprintln(stdout, "agorctl", version.Version)
		return 0
	case args[0] == "executors":
		return executorsCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "exec":
		return execCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "prompt":
		return promptCmd(ctx, args[1:], os.Stdin, stdout, stderr)
	case args[0] == "sessions":
		return sessionsCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "tasks":
		return tasksCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "events":
		return eventsCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "stop":
		return stopCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "terminal":
		return terminalCmd(ctx, args[1:], os.Stdin, stdout, stderr)
	case args[0] == "creds":
		return credsCmd(ctx, args[1:], os.Stdin, stdout, stderr)
	case args[0] == "permissions":
		return permissionsCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "doctor":
		return doctorCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "audit":
		return auditCmd(ctx, args[1:], stdout, stderr)
	case args[0] == "executor" && len(args) > 1:
		if cmd, ok := executorCommands[args[1]]; ok {
			return cmd(ctx, args[2:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "agorctl: unknown command %q (see agorctl --help)\n", args[0])
	return 2
}

var executorCommands = map[string]func(context.Context, []string, io.Writer, io.Writer) int{
	"ping":   executorPing,
	"ensure": executorEnsure,
	"stop":   executorStop,
	"list":   executorList,
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "help" }

func executorPing(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorctl executor ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "the executor's Unix socket `path`, e.g. /run/agor/executors/alice.sock")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this `duration`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *socket == "" {
		fmt.Fprintln(stderr, "agorctl executor ping: --socket is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := ping(ctx, *socket)
	if err != nil {
		fmt.Fprintf(stderr, "agorctl executor ping: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, string(res))
	return 0
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
