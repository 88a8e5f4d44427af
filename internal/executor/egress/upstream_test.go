package egress

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// doorLine is a Door that lets everyone in with a preamble, as the
// gateway's relay does with its door line.
type doorLine string

func (d doorLine) Admit(net.Conn) (Pass, error) { return Pass{Preamble: []byte(d)}, nil }

// daemon serves sock as the daemon would, each connection with serve;
// it returns how many connections it took and a stop.
func daemon(t *testing.T, sock string, serve func(n int, c net.Conn)) (*atomic.Int32, func()) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				defer c.Close()
				serve(i, c)
			}(int(n.Add(1)))
		}
	}()
	return &n, func() { ln.Close(); wg.Wait() }
}

// upperCase answers what it read, upper-cased, once the client half-closed.
func upperCase(_ int, c net.Conn) {
	b, _ := io.ReadAll(c)
	_, _ = c.Write([]byte(strings.ToUpper(string(b))))
}

// relayed serves r on loopback and returns a client's answer to msg.
func relayed(t *testing.T, r *Relay, msg string, between func()) string {
	t.Helper()
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, tln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c, err := net.Dial("tcp", tln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte(msg))
	_ = c.(*net.TCPConn).CloseWrite()
	between()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c)
	return string(got)
}

// TestRelayWaitsForDaemon: a request made while the daemon's socket is
// not there (an upgrade restarting agor-daemon.socket) reaches the daemon
// once it is back, door line first, instead of a 502 at once.
func TestRelayWaitsForDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gateway.sock")
	r := &Relay{Socket: sock, Log: slog.New(slog.DiscardHandler), Door: doorLine("door\n"), Wait: 5 * time.Second}
	var stop func()
	got := relayed(t, r, "request\n", func() {
		time.Sleep(300 * time.Millisecond)
		_, stop = daemon(t, sock, upperCase)
	})
	defer stop()
	if got != "DOOR\nREQUEST\n" {
		t.Fatalf("the client got %q", got)
	}
}

// TestRelayRedialsUnanswered: a daemon that goes with a connection it has
// not answered (in its backlog, or read and dropped as it stops) has it
// sent again, whole, to the next one; one that has answered a byte is
// not asked twice.
func TestRelayRedialsUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     func(c net.Conn) // the first connection's daemon
		want      string
		wantConns int32
	}{
		{"dropped unread", func(net.Conn) {}, "DOOR\nREQUEST\n", 2},
		{"read, unanswered", func(c net.Conn) { _, _ = c.Read(make([]byte, 3)) }, "DOOR\nREQUEST\n", 2},
		{"answered in part", func(c net.Conn) { _, _ = c.Read(make([]byte, 3)); _, _ = c.Write([]byte("HTTP/1.1 2")) }, "HTTP/1.1 2", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "gateway.sock")
			n, stop := daemon(t, sock, func(i int, c net.Conn) {
				if i == 1 {
					tc.first(c)
					return
				}
				upperCase(i, c)
			})
			defer stop()
			r := &Relay{Socket: sock, Log: slog.New(slog.DiscardHandler), Door: doorLine("door\n"), Wait: 5 * time.Second}
			if got := relayed(t, r, "request\n", func() {}); got != tc.want {
				t.Errorf("the client got %q, want %q", got, tc.want)
			}
			if got := n.Load(); got != tc.wantConns {
				t.Errorf("the daemon took %d connections, want %d", got, tc.wantConns)
			}
		})
	}
}
