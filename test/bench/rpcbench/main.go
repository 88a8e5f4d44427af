// Command rpcbench measures the executor protocol between processes over
// Unix sockets, side by side with a trivial Go NDJSON peer that it runs
// itself (a bufio.Scanner, json.Unmarshal, json.Marshal and a write per
// line), so that each figure comes with its ratio to what plain Go does:
// ping round trips against the real agor-executor, pipelined ping
// throughput over one connection, report_message notification throughput
// into an rpc.Conn, and the idle executor's resident memory. Rounds of
// ours and the trivial peer's alternate, so that noise from the machine
// falls on both. It prints numbers; it asserts nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/executor/exectest"
)

type config struct {
	executor   string
	pings      int // sequential pings per side, over all rounds
	rounds     int
	pipelined  int // pipelined pings per side and round
	goroutines int
	notes      int // notifications per side and round
	noteRounds int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.executor, "executor", "bin/agor-executor", "path of the agor-executor binary to measure")
	flag.IntVar(&cfg.pings, "pings", 100_000, "sequential ping round trips to time on each side")
	flag.IntVar(&cfg.rounds, "rounds", 10, "alternating rounds the pings are split into")
	flag.IntVar(&cfg.pipelined, "pipelined", 100_000, "pipelined pings per side and round")
	flag.IntVar(&cfg.goroutines, "goroutines", 64, "goroutines calling at once on one connection in the pipelined test")
	flag.IntVar(&cfg.notes, "notifications", 300_000, "report_message notifications per side and round")
	flag.IntVar(&cfg.noteRounds, "notify-rounds", 5, "alternating rounds of the notification test")
	sender := flag.String("sender", "", "internal: run as the notification sender, connecting to this socket")
	trivial := flag.String("trivial-server", "", "internal: run as the trivial NDJSON ping server on this socket")
	trivialSender := flag.Bool("trivial-sender", false, "internal: with -sender, send as the trivial peer does")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (the daemon side) to `file`")
	flag.Parse()
	if *cpuprofile != "" && *sender == "" {
		senderProfile = *cpuprofile + ".sender"
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	var err error
	switch {
	case *sender != "":
		err = send(*sender, cfg.notes, *trivialSender)
	case *trivial != "":
		err = trivialServe(*trivial)
	default:
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rpcbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// senderProfile is where the sender process writes its CPU profile.
var senderProfile string

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "rpcbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if os.Geteuid() == 0 { // the executor runs as the tests' account and makes its socket here
		cred, err := testAccount()
		if err != nil {
			return err
		}
		_ = os.Chown(dir, int(cred.Uid), int(cred.Gid))
	}
	fmt.Printf("rpcbench: %s, GOMAXPROCS=%s, %d cores; trivial = a plain Go NDJSON peer (bufio.Scanner, encoding/json)\n",
		cfg.executor, os.Getenv("GOMAXPROCS"), numCPU())

	ex, sock, err := startExecutor(dir, cfg.executor)
	if err != nil {
		return err
	}
	defer stop(ex)
	tr, tsock, err := startTrivial(dir)
	if err != nil {
		return err
	}
	defer stop(tr)

	time.Sleep(300 * time.Millisecond)
	fmt.Printf("idle executor RSS after start:   %6.2f MiB\n", rssMiB(ex.Process.Pid))
	if err := benchPing(cfg, sock, tsock); err != nil {
		return err
	}
	time.Sleep(time.Second) // idle again, connections closed
	fmt.Printf("idle executor RSS after the pings: %6.2f MiB\n", rssMiB(ex.Process.Pid))
	return benchNotify(cfg, dir)
}

func stop(cmd *exec.Cmd) { _ = cmd.Process.Kill(); _ = cmd.Wait() }

// startExecutor runs the real binary on a private socket: as this user,
// or as the tests' account when this is root (an executor refuses root,
// and nobody like every special account).
func startExecutor(dir, bin string) (*exec.Cmd, string, error) {
	sock := filepath.Join(dir, "exec.sock")
	cmd := exec.Command(bin, "--listen", sock, "--daemon-user", strconv.Itoa(os.Getuid()), "--idle-timeout", "0", "--log-format", "text", "--log-level", "warn")
	if os.Geteuid() == 0 {
		cred, err := testAccount()
		if err != nil {
			return nil, "", err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	return startListener(cmd, sock)
}

// testAccount is exectest.Account's uid and gid (test/deps.sh creates it).
func testAccount() (*syscall.Credential, error) {
	u, err := user.Lookup(exectest.Account)
	if err != nil {
		return nil, fmt.Errorf("run as root, the executor runs as %q: %w (test/deps.sh creates it)", exectest.Account, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// startTrivial runs this binary as the trivial ping server.
func startTrivial(dir string) (*exec.Cmd, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	sock := filepath.Join(dir, "trivial.sock")
	return startListener(exec.Command(self, "--trivial-server", sock), sock)
}

// startListener starts cmd and waits until it listens on sock.
func startListener(cmd *exec.Cmd, sock string) (*exec.Cmd, string, error) {
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	for range 200 {
		if _, err := os.Stat(sock); err == nil {
			return cmd, sock, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop(cmd)
	return nil, "", fmt.Errorf("%s did not listen on %s", cmd.Path, sock)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// rssMiB reads VmRSS of pid.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return -1
}
