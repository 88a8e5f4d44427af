// Command rpcbench measures the executor protocol between two processes
// over a Unix socket: ping round trips against the real agor-executor,
// one-way report_message notification throughput, and the idle
// executor's resident memory. It prints numbers; it asserts nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agor-sh/agor/internal/rpc"
)

func main() {
	executor := flag.String("executor", "bin/agor-executor", "path of the agor-executor binary to measure")
	pings := flag.Int("pings", 100_000, "ping round trips to time")
	notes := flag.Int("notifications", 1_000_000, "report_message notifications to send")
	sender := flag.String("sender", "", "internal: run as the notification sender, connecting to this socket")
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
	if *sender != "" {
		if err := send(*sender, *notes); err != nil {
			fmt.Fprintln(os.Stderr, "rpcbench sender:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*executor, *pings, *notes); err != nil {
		fmt.Fprintln(os.Stderr, "rpcbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// senderProfile is where the sender process writes its CPU profile.
var senderProfile string

func run(executor string, pings, notes int) error {
	dir, err := os.MkdirTemp("", "rpcbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if os.Geteuid() == 0 { // the executor runs as nobody and makes its socket here
		_ = os.Chown(dir, 65534, 65534)
	}
	fmt.Printf("rpcbench: %s, GOMAXPROCS=%s, %d cores\n", executor, os.Getenv("GOMAXPROCS"), numCPU())

	ex, sock, err := startExecutor(dir, executor)
	if err != nil {
		return err
	}
	defer func() { _ = ex.Process.Kill(); _ = ex.Wait() }()

	time.Sleep(300 * time.Millisecond)
	fmt.Printf("idle executor RSS after start:   %6.2f MiB\n", rssMiB(ex.Process.Pid))
	if err := benchPing(sock, pings); err != nil {
		return err
	}
	time.Sleep(time.Second) // idle again, connection closed
	fmt.Printf("idle executor RSS after %dk pings: %6.2f MiB\n", pings/1000, rssMiB(ex.Process.Pid))
	return benchNotify(dir, notes)
}

// startExecutor runs the real binary on a private socket: as this user,
// or as nobody when this is root (an executor refuses root).
func startExecutor(dir, bin string) (*exec.Cmd, string, error) {
	sock := filepath.Join(dir, "exec.sock")
	cmd := exec.Command(bin, "--listen", sock, "--daemon-user", strconv.Itoa(os.Getuid()), "--idle-timeout", "0", "--log-format", "text", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", bin, err)
	}
	for range 200 {
		if _, err := os.Stat(sock); err == nil {
			return cmd, sock, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, "", fmt.Errorf("%s did not listen on %s", bin, sock)
}

func benchPing(sock string, n int) error {
	ctx := context.Background()
	c, err := rpc.Dial(ctx, sock, nil, rpc.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for range 2000 { // warm up
		if err := c.Call(ctx, "ping", nil, nil); err != nil {
			return err
		}
	}
	lat := make([]time.Duration, n)
	start := time.Now()
	for i := range lat {
		t0 := time.Now()
		if err := c.Call(ctx, "ping", nil, nil); err != nil {
			return err
		}
		lat[i] = time.Since(t0)
	}
	total := time.Since(start)
	slices.Sort(lat)
	fmt.Printf("ping round trip over %d calls:   p50 %s  p99 %s  max %s  (%.0f calls/s)\n",
		n, us(lat[n/2]), us(lat[n*99/100]), us(lat[n-1]), float64(n)/total.Seconds())
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d.Nanoseconds())/1000) }

// benchNotify starts a second process that sends report_message
// notifications to this one, which decodes each as the daemon would.
func benchNotify(dir string, n int) error {
	sock := filepath.Join(dir, "daemon.sock")
	recv, err := newReceiver(sock, n)
	if err != nil {
		return err
	}
	defer recv.close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "--sender", sock, "--notifications", strconv.Itoa(n))
	if senderProfile != "" {
		child.Args = append(child.Args, "--cpuprofile", senderProfile)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	elapsed, err := recv.wait(60 * time.Second)
	recv.close() // the sender exits once we hang up
	_ = child.Wait()
	if err != nil {
		return err
	}
	fmt.Printf("report_message notifications:    %d of %d bytes in %s = %.0f/s (%.1f MB/s)\n",
		n, recv.size, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(n*recv.size)/elapsed.Seconds()/1e6)
	return nil
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
