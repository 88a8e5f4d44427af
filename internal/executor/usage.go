package executor

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agor-sh/agor/internal/flagenv"
)

const manual = `NAME
    agor-executor - run one user's agent work, terminals and files for agor-daemon

SYNOPSIS
    agor-executor [OPTIONS]                 (started by systemd: agor-executor@USER.service)
    agor-executor --listen PATH [OPTIONS]   (started by hand, for development)
    agor-executor --dial HOST:PORT --dial-ca FILE [OPTIONS] <TOKEN
                                            (a Slurm job on a compute node)

DESCRIPTION
    agor-executor runs as the Unix user whose work it does, never as root. systemd
    starts it on the first connection to /run/agor/executors/USER.sock through the
    socket unit agor-executor@USER.socket, passing the listening socket as fd 3
    (LISTEN_FDS, LISTEN_FDNAMES). It speaks JSON-RPC 2.0, one JSON object per line,
    in both directions, and serves only root and the daemon's account, checked with
    SO_PEERCRED on every connection; a refused peer is logged with its uid and pid.

    Before serving it applies the daemon's execution policy (min_uid, allowed_users,
    allowed_groups in the root-owned --config) to its own account, looked up as the
    system does (systemd's user database, or NSS), and refuses to serve when the
    account is not allowed: the rule holds even if the daemon's account is not.

    It tells systemd READY=1 once listening, keeps STATUS= current (connections,
    requests in flight), sends watchdog pings when WatchdogSec= is set, and STOPPING=1
    on shutdown. After --idle-timeout with no connection and nothing running it exits
    with status 0 and leaves the socket to systemd, which starts it again on the next
    connection. On SIGTERM it stops accepting, lets running requests finish for up to
    --stop-timeout, then cancels them.

    With --dial (the daemon's slurm backend submits the user's job with it) the
    executor never listens: nothing on a shared compute node may connect to it. It
    dials the daemon over TLS 1.3, trusting only the CA in --dial-ca, presents its
    job's token (read from standard input: the job script's here document, which
    only the user and root can read) bound to its user and --job-id, and then serves
    that one connection as it serves a socket's. When the connection drops (the
    daemon restarts) it dials again, with backoff; a refused token (the job's token
    was revoked) ends it. SIGUSR1, Slurm's notice that the job nears its time limit,
    stops it as SIGTERM does.

    Under journald (stderr is a journal stream) every line is a native journal entry
    with fields AGOR_USER, AGOR_PEER_UID, AGOR_PEER_PID, AGOR_METHOD, ...:
        journalctl -u agor-executor@alice.service AGOR_USER=alice

OPTIONS
`

const trailer = `
ENVIRONMENT
    Every option can also be given as an environment variable, shown beside it
    (the command line wins), e.g. in a drop-in for agor-executor@.service:
        [Service]
        Environment=AGOR_EXECUTOR_IDLE_TIMEOUT=5min

EXIT STATUS
    0   stopped normally: idle, SIGTERM, or a shutdown request
    1   failed while running (no socket, socket in use, ...)
    2   usage or configuration error, including being started as root
    78  this account may not have an executor: its uid is below min_uid, or it is
        in neither allowed_users nor allowed_groups of --config, or, with
        --environment, not in the environment's users or groups (the journal says
        which); connections already waiting are closed, and the unit does not
        restart it (RestartPreventExitStatus=78)

EXAMPLES
    Serve by hand on a private socket, for the current user's daemon:
        agor-executor --listen /tmp/exec.sock --daemon-user "$(id -u)"
    Ping it:
        agorctl executor ping --socket /tmp/exec.sock

SEE ALSO
    agorctl(1), systemd.socket(5), sd_notify(3), journalctl(1)
`

func usage(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	b.WriteString(manual)
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "    --%s %s\n", f.Name, name)
		fmt.Fprintf(&b, "        %s\n", text)
		fmt.Fprintf(&b, "        default: %s; environment: %s\n", defaultText(f), flagenv.Name(envPrefix, f.Name))
	})
	b.WriteString(trailer)
	fmt.Fprint(w, b.String())
}

func defaultText(f *flag.Flag) string {
	if f.DefValue == "" {
		return "none"
	}
	return f.DefValue
}
