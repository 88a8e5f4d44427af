package executor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/wire/protocol"
)

// dialListener is --dial: the executor of a Slurm job dials the daemon
// rather than listen. The token comes on stdin (the job script's here
// document, readable only by the user and root), so it is in no argument
// list or environment another process could read.
func dialListener(o *Options, stdin io.Reader) (*dialback.Listener, error) {
	if o.DialCA == "" {
		return nil, errors.New("--dial needs --dial-ca: the daemon's CA is pinned, the system's roots are never asked")
	}
	if o.JobID == "" {
		return nil, errors.New("--dial needs --job-id (or $SLURM_JOB_ID): the token is bound to the job")
	}
	ca, err := dialback.LoadCA(o.DialCA)
	if err != nil {
		return nil, fmt.Errorf("--dial-ca: %w", err)
	}
	line, err := bufio.NewReaderSize(stdin, 256).ReadString('\n')
	token := strings.TrimSpace(line)
	if token == "" {
		return nil, fmt.Errorf("--dial: no token on standard input (%v)", err)
	}
	host, _ := os.Hostname()
	return dialback.NewListener(&dialback.Dialer{
		Addr: o.Dial, ServerName: o.DialName, CA: ca,
		Hello: protocol.HelloParams{Token: token, User: CurrentUser(), JobID: o.JobID, Node: host, PID: os.Getpid()},
	}), nil
}
