package egress

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRelay: bytes go both ways untouched between a loopback client and
// the Unix socket, half-closes included; a daemon that is not there gets
// the client a 502 saying so; Serve ends with its context.
func TestRelay(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	go func() { // upper-cases what it reads, until the client half-closes
		for {
			c, err := uln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				_, _ = c.Write([]byte(strings.ToUpper(string(b))))
			}()
		}
	}()
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{Socket: sock, Max: 2, Log: slog.New(slog.DiscardHandler), Wait: 300 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, tln) }()
	for range 5 { // more than Max, one after another
		c, err := net.Dial("tcp", tln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("connect me\n"))
		_ = c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != "CONNECT ME\n" {
			t.Fatalf("relayed %q", got)
		}
	}
	uln.Close()
	c, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.Contains(line, "502") {
		t.Errorf("no daemon: %q", line)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestEnv(t *testing.T) {
	env := Env(3128)
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		if env[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	if env["NO_PROXY"] != "localhost,127.0.0.1,::1" || env["no_proxy"] != env["NO_PROXY"] {
		t.Errorf("NO_PROXY = %q", env["NO_PROXY"])
	}
	served = 0
	if SessionEnv("abc") != nil {
		t.Error("SessionEnv without a proxy served")
	}
	served = 3128
	defer func() { served = 0 }()
	if got := SessionEnv("abc")["HTTPS_PROXY"]; got != "http://session:abc@127.0.0.1:3128" {
		t.Errorf("SessionEnv = %q", got)
	}
	if SessionEnv("a@b:c") != nil {
		t.Error("SessionEnv took an id that would break the URL")
	}
}
