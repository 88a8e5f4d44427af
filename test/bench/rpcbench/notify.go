package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/rpc"
)

// reportMessage has the fields of the protocol's report_message.
type reportMessage struct {
	SessionToken string          `json:"session_token"`
	TaskID       string          `json:"task_id"`
	Sequence     int64           `json:"sequence"`
	Timestamp    int64           `json:"timestamp"`
	EventType    string          `json:"event_type"`
	EventData    json.RawMessage `json:"event_data"`
}

// template is a report_message whose params encode to about 256 bytes;
// payload varies only the sequence and time.
var template = func() reportMessage {
	m := reportMessage{
		SessionToken: strings.Repeat("t", 43), TaskID: "0199c1d4-6f2e-7a51-9c1b-3e5f7a9b1c2d",
		Timestamp: time.Now().UnixMilli(), EventType: "text_delta",
	}
	base, _ := json.Marshal(m)
	pad := 256 - len(base) - len(`{"text":""}`)
	m.EventData = json.RawMessage(`{"text":"` + strings.Repeat("a", max(pad, 0)) + `"}`)
	return m
}()

func payload(seq int64) reportMessage {
	m := template
	m.Sequence, m.Timestamp = seq, time.Now().UnixMilli()
	return m
}

type receiver struct {
	ln    *net.UnixListener
	conn  chan *rpc.Conn
	got   atomic.Int64
	first atomic.Int64
	done  chan time.Duration
	n     int64
	size  int
	gaps  atomic.Int64
	once  sync.Once
}

func newReceiver(path string, n int) (*receiver, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(payload(0))
	r := &receiver{ln: ln, conn: make(chan *rpc.Conn, 1), done: make(chan time.Duration, 1), n: int64(n), size: len(b)}
	go r.accept()
	return r, nil
}

func (r *receiver) accept() {
	nc, err := r.ln.Accept()
	if err != nil {
		return
	}
	mux := rpc.NewMux()
	mux.Register("report_message", rpc.Method(r.report))
	c := rpc.NewConn(nc, mux, rpc.Options{})
	r.conn <- c
	_ = c.Serve(context.Background())
}

// report decodes and checks the sequence, as the daemon's sink must.
func (r *receiver) report(_ context.Context, m reportMessage) (any, error) {
	got := r.got.Add(1)
	if got == 1 {
		r.first.Store(time.Now().UnixNano())
	}
	if m.Sequence != got-1 {
		r.gaps.Add(1)
	}
	if got == r.n {
		r.done <- time.Since(time.Unix(0, r.first.Load()))
	}
	return nil, nil
}

func (r *receiver) wait(limit time.Duration) (time.Duration, error) {
	select {
	case d := <-r.done:
		if g := r.gaps.Load(); g > 0 {
			return d, fmt.Errorf("%d notifications out of order", g)
		}
		return d, nil
	case <-time.After(limit):
		return 0, fmt.Errorf("received %d of %d notifications in %s", r.got.Load(), r.n, limit)
	}
}

func (r *receiver) close() {
	r.once.Do(func() {
		_ = r.ln.Close()
		select {
		case c := <-r.conn:
			_ = c.Close()
		default:
		}
	})
}

// send is the other process: it connects and streams n notifications.
func send(path string, n int) error {
	c, err := rpc.Dial(context.Background(), path, nil, rpc.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range int64(n) {
		if err := c.Notify("report_message", payload(i)); err != nil {
			return fmt.Errorf("notification %d: %w", i, err)
		}
	}
	// Wait for the receiver to close, so no notification is cut off.
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		return errors.New("receiver did not finish")
	}
	return nil
}
