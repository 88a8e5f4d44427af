// Command dialbench measures the slurm backend's parts on the suite's
// cluster, run as root on the login host: a job's start through the queue
// to its executor's dial-back, the ping round trip over the dial-back's
// TLS link, and one squeue of every user's jobs (the daemon's watch) with
// 100 jobs queued. Jobs are submitted as -user with setpriv, as the
// user's own executor would.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agor-sh/agor/internal/dialback"
	"github.com/agor-sh/agor/internal/slurm"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

func main() {
	listen := flag.String("listen", "10.213.0.10:7444", "dial-back address for the bench")
	cert := flag.String("cert", "/etc/agor/dialback.pem", "certificate")
	key := flag.String("key", "/etc/agor/dialback.key", "key")
	user := flag.String("user", "alice", "whose jobs")
	uid := flag.Uint("uid", 20101, "the user's uid")
	jobs := flag.Int("jobs", 10, "job starts to time")
	pings := flag.Int("pings", 1000, "pings to time")
	queued := flag.Int("queued", 100, "held jobs for the squeue timing")
	flag.Parse()
	if err := run(*listen, *cert, *key, *user, uint32(*uid), *jobs, *pings, *queued); err != nil {
		fmt.Fprintln(os.Stderr, "dialbench:", err)
		os.Exit(1)
	}
}

func run(listen, certFile, keyFile, user string, uid uint32, nJobs, nPings, nQueued int) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	reg, _ := dialback.OpenJobs("")
	got := make(chan dialback.Accepted, 1)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go (&dialback.Server{Jobs: reg, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Deliver: func(a dialback.Accepted) { got <- a }}).Serve(ctx, ln)

	var starts []time.Duration
	var client *rpc.Client
	for i := range nJobs {
		token, _ := reg.Issue(user, uid)
		t0 := time.Now()
		id, err := submitAs(user, script(listen, token), "agor-dialbench")
		if err != nil {
			return err
		}
		var a dialback.Accepted
		select {
		case a = <-got:
		case <-time.After(60 * time.Second):
			return fmt.Errorf("job %s did not dial back", id)
		}
		c := rpc.NewClient(a.Conn, nil, rpc.Options{})
		if err := c.Call(ctx, protocol.MethodPing, nil, nil); err != nil {
			return err
		}
		starts = append(starts, time.Since(t0))
		if i == nJobs-1 {
			client = c // kept for the pings
			break
		}
		_ = c.Call(ctx, protocol.MethodShutdown, protocol.ShutdownParams{Reason: "bench", TimeoutMS: 1000}, nil)
		c.Close()
	}
	fmt.Printf("slurm: job start through the queue to a pinged executor (sbatch, schedule, start, TLS dial-back, hello, ping): median %s, min %s, max %s of %d\n",
		median(starts), slices.Min(starts), slices.Max(starts), len(starts))

	rtts := make([]time.Duration, 0, nPings)
	for range nPings {
		t0 := time.Now()
		if err := client.Call(ctx, protocol.MethodPing, nil, nil); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	fmt.Printf("slurm: ping over the dial-back's TLS link: p50 %s, p99 %s of %d\n", rtts[len(rtts)/2], rtts[len(rtts)*99/100], len(rtts))
	_ = client.Call(ctx, protocol.MethodShutdown, protocol.ShutdownParams{Reason: "bench", TimeoutMS: 1000}, nil)
	client.Close()
	return watchCost(user, nQueued)
}

// watchCost queues held jobs and times the daemon's one squeue for all.
func watchCost(user string, n int) error {
	var ids []string
	for range n {
		id, err := submitAs(user, "#!/bin/sh\nexit 0\n", "agor-dialbench-held", "--hold")
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	defer exec.Command("scancel", ids...).Run()
	cmds := slurm.Commands{}
	var polls []time.Duration
	var seen int
	for range 11 {
		t0 := time.Now()
		jobs, err := cmds.Queue(context.Background(), "agor-dialbench-held")
		if err != nil {
			return err
		}
		polls = append(polls, time.Since(t0))
		seen = len(jobs)
	}
	fmt.Printf("slurm: the daemon's watch of %d jobs (one squeue for all users, parsed): median %s of %d polls\n", seen, median(polls), len(polls))
	return nil
}

func script(addr, token string) string {
	return "#!/bin/sh\nexec /usr/libexec/agor/agor-executor --dial " + addr + " --dial-ca /etc/agor/dialback-ca.pem --idle-timeout 30s <<'AGOR_TOKEN'\n" + token + "\nAGOR_TOKEN\n"
}

// submitAs runs sbatch as user (setpriv: what her executor would run).
func submitAs(user, script, name string, extra ...string) (string, error) {
	args := append([]string{"--reuid=" + user, "--regid=" + user, "--init-groups", "sbatch", "--parsable", "--job-name=" + name,
		"--output=/dev/null", "--chdir=/home/" + user}, extra...)
	cmd := exec.Command("setpriv", args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/home/" + user}
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch as %s: %v: %s", user, err, out)
	}
	return slurm.ParseSubmitted(string(out))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
