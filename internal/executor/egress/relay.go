// Package egress is the executor's end of network egress under mode
// proxy: inside the unit's own network namespace (PrivateNetwork=yes) it
// serves a loopback HTTP proxy port and relays each connection, bytes
// untouched, to the daemon's egress service on a Unix socket, which
// decides. Agents, commands and terminals find it through HTTPS_PROXY and
// HTTP_PROXY. The relay decides nothing: the namespace is what keeps
// everything else from going out, and the daemon knows the person from
// the socket's SO_PEERCRED. The same Relay serves the model gateway's
// loopback port, where a Door (internal/executor/door) decides who gets
// in and names the task to the daemon.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Relay accepts on a loopback port and relays to Socket.
type Relay struct {
	Socket string // the daemon's egress service
	Max    int    // connections relayed at once (default 256); more wait
	Log    *slog.Logger
	// Door, when set, decides on each connection as it is accepted (the
	// model gateway's relay: only a running task's processes); nil lets
	// everyone through (the egress proxy, in a namespace of its own).
	Door Door
	// Wait is how long a connection waits for the daemon's socket to be
	// there (upstream.go; 0: DefaultWait).
	Wait time.Duration
}

// Door decides whether an accepted connection is relayed, on the accept
// loop and before anything is read from it: a refused one is answered
// (a *Refusal's response) and closed at once, and holds no goroutine.
type Door interface {
	Admit(c net.Conn) (Pass, error)
}

// Pass is what a Door lets a connection through with.
type Pass struct {
	// Preamble is written to the daemon's socket before the client's
	// bytes (the gateway's door line, naming the task).
	Preamble []byte
	// Leave is called once the connection has ended; nil: nothing.
	Leave func()
}

// Refusal is a Door's answer to a client it turns away: an HTTP response
// of Status with Message, then the connection is closed.
type Refusal struct {
	Status  int
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Serve relays ln's connections until ctx ends, then closes them.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	limit := r.Max
	if limit <= 0 {
		limit = 256
	}
	slots := make(chan struct{}, limit)
	var open conns
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		open.closeAll()
	})
	defer stop()
	defer open.wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("egress relay: %w", err)
		}
		pass, ok := r.admit(c)
		if !ok {
			<-slots
			continue
		}
		open.run(c, func() {
			r.relay(ctx, c, pass.Preamble)
			if pass.Leave != nil {
				pass.Leave()
			}
			<-slots
		})
	}
}

// conns are the connections being relayed, each on a goroutine of its
// own that wait waits for.
type conns struct {
	mu   sync.Mutex
	open map[net.Conn]struct{}
	wg   sync.WaitGroup
}

// run relays c with relay on a new goroutine.
func (o *conns) run(c net.Conn, relay func()) {
	o.mu.Lock()
	if o.open == nil {
		o.open = map[net.Conn]struct{}{}
	}
	o.open[c] = struct{}{}
	o.mu.Unlock()
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		relay()
		o.mu.Lock()
		delete(o.open, c)
		o.mu.Unlock()
	}()
}

func (o *conns) closeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.open {
		c.Close()
	}
}

func (o *conns) wait() { o.wg.Wait() }

// admit asks the Door, answering and closing c when it says no.
func (r *Relay) admit(c net.Conn) (Pass, bool) {
	if r.Door == nil {
		return Pass{}, true
	}
	pass, err := r.Door.Admit(c)
	if err == nil {
		return pass, true
	}
	no, ok := err.(*Refusal)
	if !ok {
		no = &Refusal{Status: http.StatusForbidden, Message: err.Error()}
	}
	// One write into a new socket's empty buffer: it does not block (the
	// deadline is for a peer that shrank its window to nothing).
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	body := no.Message + "\n"
	_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(no.Status)+" "+http.StatusText(no.Status)+
		"\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	c.Close()
	return Pass{}, false
}

// relay joins one client to a new connection to the daemon, which hears
// preamble first; the connection outlives the daemon going before it
// answers (upstream.go).
func (r *Relay) relay(ctx context.Context, c net.Conn, preamble []byte) {
	defer c.Close()
	up, err := r.connect(ctx, preamble)
	if err != nil {
		r.Log.Warn("egress relay: cannot reach the daemon's egress service", "socket", r.Socket, "err", err, "waited", r.wait())
		const body = "agor egress: the daemon's egress service is not reachable\n"
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		drain(c)
		return
	}
	defer up.Close()
	done := make(chan struct{})
	var sent int64
	var sendErr error
	go func() {
		defer close(done)
		sent, sendErr = io.Copy(up, c)
		_ = up.CloseWrite()
	}()
	got, gotErr := io.Copy(c, up)
	daemonFirst := false
	select {
	case <-done:
	default:
		daemonFirst = true // the program still has its end open
	}
	closeWrite(c)
	<-done
	if daemonFirst {
		// A program's HTTP client closes a kept-alive connection itself;
		// the daemon ending one first cut an answer short, or said
		// Connection: close.
		r.Log.Info("egress relay: the daemon's egress service ended a connection while the program still had it open",
			"bytes_sent", sent, "bytes_received", got, "receive_error", fmt.Sprint(gotErr))
	}
	if sendErr != nil || gotErr != nil {
		// Which end broke off, for a client that says its response was
		// malformed: the program's (sending) or the daemon's (receiving).
		r.Log.Info("egress relay: a connection ended with an error", "bytes_sent", sent, "send_error", fmt.Sprint(sendErr),
			"bytes_received", got, "receive_error", fmt.Sprint(gotErr))
	}
}

// drain ends c after an answer the relay wrote itself: closed with the
// client's request unread, the kernel would reset the connection, and the
// client see ECONNRESET in place of the answer. What it sent is read and
// dropped, within a bound.
func drain(c net.Conn) {
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, maxReplay))
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// ErrNotPrivate is a network namespace with more than loopback in it:
// serving a proxy there would offer the person's egress to others.
var ErrNotPrivate = errors.New("this executor is not in a network namespace of its own")

// CheckPrivate reports whether the process sees loopback interfaces only,
// as in a unit with PrivateNetwork=yes.
func CheckPrivate() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list network interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("%w: it sees interface %s (the unit needs PrivateNetwork=yes: agorctl network apply)", ErrNotPrivate, i.Name)
		}
	}
	return nil
}

// Env are the variables that point children at the proxy on port: both
// cases, since tools read one or the other, and loopback left direct.
func Env(port int) map[string]string { return env("http://127.0.0.1:" + strconv.Itoa(port)) }

// SessionEnv is Env for an agent of session: the proxy URL carries the
// session as its user name and id ("session:ID@"), which clients send as
// Proxy-Authorization, so the daemon can name the task in its records.
// Empty when this executor serves no proxy.
func SessionEnv(session string) map[string]string {
	if served == 0 || !validID(session) {
		return nil
	}
	return env("http://session:" + session + "@127.0.0.1:" + strconv.Itoa(served))
}

// served is the port SetEnv pointed children at (0: none).
var served int

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func env(url string) map[string]string {
	noProxy := "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTPS_PROXY": url, "https_proxy": url,
		"HTTP_PROXY": url, "http_proxy": url,
		"ALL_PROXY": url, "all_proxy": url,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
	}
}

// SetEnv puts Env into this process's environment, which every agent,
// command and terminal it starts inherits.
func SetEnv(port int) error {
	for k, v := range Env(port) {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	served = port
	return nil
}
