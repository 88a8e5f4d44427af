// Command coldbench measures cold activation of an executor under real
// systemd: with the service stopped (its socket still listening), the
// time from connect until the first ping reply, repeated; it prints the
// median and the spread. Run inside the test container, as root.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	sock := flag.String("socket", "/run/agor/executors/alice.sock", "executor socket")
	unit := flag.String("unit", "agor-executor@alice.service", "the service to stop before each cycle")
	n := flag.Int("n", 21, "cycles")
	flag.Parse()
	var lat []time.Duration
	for i := range *n {
		if err := stop(*unit); err != nil {
			fail(fmt.Errorf("cycle %d: %w\n%s", i, err, whoStarted(*unit, *sock)))
		}
		d, err := ping(*sock)
		if err != nil {
			fail(fmt.Errorf("cycle %d: %w", i, err))
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	fmt.Printf("cold_activation_ms median=%.1f min=%.1f max=%.1f n=%d\n", ms(lat[len(lat)/2]), ms(lat[0]), ms(lat[len(lat)-1]), len(lat))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// stop stops the service and waits until it is inactive.
func stop(unit string) error {
	if out, err := exec.Command("systemctl", "stop", unit).CombinedOutput(); err != nil {
		return fmt.Errorf("stop %s: %v: %s", unit, err, out)
	}
	for range 200 {
		out, _ := exec.Command("systemctl", "is-active", unit).Output()
		if s := strings.TrimSpace(string(out)); s == "inactive" || s == "failed" {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s did not stop", unit)
}

func ping(sock string) (time.Duration, error) {
	t0 := time.Now()
	c, err := net.Dial("unix", sock)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"pong":true`) {
		return 0, fmt.Errorf("ping reply %q: %v", line, err)
	}
	return time.Since(t0), nil
}

// whoStarted says, for a unit that started again at once, its state and
// the processes connected to its socket: who asked for it.
func whoStarted(unit, sock string) string {
	state, _ := exec.Command("systemctl", "show", "-p", "ActiveState,SubState,ExecMainPID", unit).Output()
	conns, _ := exec.Command("ss", "-xpn").Output()
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(string(state)), "\n", " "))
	for _, l := range strings.Split(string(conns), "\n") {
		if strings.Contains(l, sock) {
			b.WriteString("\n  " + strings.Join(strings.Fields(l), " "))
		}
	}
	return b.String()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "coldbench:", err)
	os.Exit(1)
}
