package executor

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/envdef"
	"github.com/agor-sh/agor/internal/executor/task"
	"github.com/agor-sh/agor/internal/flagenv"
	"github.com/agor-sh/agor/internal/version"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// envPrefix names every option's environment variable (AGOR_EXECUTOR_ROOT).
const envPrefix = "AGOR_EXECUTOR"

// ParseFlags reads agor-executor's command line, and its AGOR_EXECUTOR_*
// environment variables, into Options. A nil Options means the process
// is done, with the exit status returned: --help or --version printed on
// stdout, or a usage error said on stderr.
func ParseFlags(args []string, stdout, stderr io.Writer) (*Options, int) {
	o := &Options{}
	var showVersion bool
	fs := flag.NewFlagSet("agor-executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	define(fs, o)
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	fs.Usage = func() { usage(stdout, fs) }
	if err := flagenv.Apply(fs, envPrefix); err != nil {
		fmt.Fprintln(stderr, "agor-executor:", err)
		return nil, ExitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, ExitOK
		}
		return nil, ExitUsage
	}
	fs.Visit(func(f *flag.Flag) { o.RootGiven = o.RootGiven || f.Name == "root" })
	if _, ok := os.LookupEnv(flagenv.Name(envPrefix, "root")); ok {
		o.RootGiven = true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agor-executor: unexpected argument %q (see --help)\n", fs.Arg(0))
		return nil, ExitUsage
	}
	if showVersion {
		fmt.Fprintln(stdout, "agor-executor", version.Version)
		return nil, ExitOK
	}
	return o, -1
}

// define adds the options but --version to fs, in --help's order.
func define(fs *flag.FlagSet, o *Options) {
	fs.StringVar(&o.Root, "root", os.Getenv("HOME"), "directory every file, exec and watch path resolves beneath (default: $HOME, which User= sets)")
	fs.StringVar(&o.Agents, "agents", task.DefaultAgentsPath, "agent CLI settings `file` (binary and environment per agentic tool; missing: each CLI by name on PATH); read again at the next prompt when it changes")
	fs.StringVar(&o.Listen, "listen", "", "listen on this Unix socket `path` (made 0660) instead of the socket systemd passes")
	fs.StringVar(&o.Dial, "dial", "", "dial the daemon at this `host:port` over TLS 1.3 instead of listening (an executor started as a Slurm job on a compute node, where nothing may connect to it); the job's token is the first line of standard input, never an argument or the environment")
	fs.StringVar(&o.DialCA, "dial-ca", "", "PEM `file` of the CA that certified the daemon's dial-back listener: the only CA trusted with --dial")
	fs.StringVar(&o.DialName, "dial-name", "", "the `name` the daemon's certificate must carry with --dial (default: the host of --dial)")
	fs.StringVar(&o.JobID, "job-id", os.Getenv("SLURM_JOB_ID"), "with --dial: the `id` of the job this executor runs in, which its token is bound to (default: $SLURM_JOB_ID)")
	fs.StringVar(&o.SocketName, "socket-name", "executor", "`name` of the activated socket (FileDescriptorName= of the .socket unit)")
	fs.StringVar(&o.DaemonUser, "daemon-user", "agor", "the one non-root `user` (name or uid) served, with root; nobody else, not even its group")
	fs.StringVar(&o.Config, "config", config.DefaultPath, "the daemon's configuration `file`, root-owned, whose min_uid, allowed_users and allowed_groups the executor applies to its own account (missing: the defaults, min_uid 1000)")
	fs.StringVar(&o.Environment, "environment", "", "the environment `name` this executor runs in (its unit sets it); the account must be in its definition's users or groups, or the executor refuses to serve (exit 78)")
	fs.StringVar(&o.EnvironmentsDir, "environments-dir", envdef.DefaultDir, "where environment definitions are (`directory`, root-owned)")
	fs.StringVar(&o.Egress, "egress-socket", "", "under network mode proxy: relay a loopback HTTP proxy port to the daemon's egress service at this Unix socket `path`, and point agents, commands and terminals at it (HTTPS_PROXY, HTTP_PROXY); served only inside a network namespace of the executor's own (PrivateNetwork=yes; agorctl network apply writes both)")
	fs.StringVar(&o.Gateway, "gateway-socket", "/run/agor/gateway.sock", "the daemon's model gateway at this Unix socket `path`: a task the daemon gives a gateway token has its agent pointed at a loopback port relayed here, with the token in place of the key")
	fs.IntVar(&o.EgressPort, "egress-port", 3128, "the loopback `port` of the proxy served with --egress-socket")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 60*time.Second, "exit after this `duration` with no connection and nothing running; 0 never exits")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", 10*time.Second, "on SIGTERM, how long running requests may finish before they are cancelled")
	fs.IntVar(&o.MaxLine, "max-line", rpc.DefaultMaxLine, "longest JSON-RPC message in `bytes`; longer ones are refused, the connection lives on")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", 64, "requests handled at once per connection; more are refused with the limit error")
	fs.StringVar(&o.LogFormat, "log-format", "auto", "auto (journal when stderr is a journal stream), journal, or text")
	fs.StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
}
