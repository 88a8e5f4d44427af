package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agor-sh/agor/internal/wire/rpc"
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

// noteSide is one sender and receiver pair.
type noteSide struct {
	name            string
	trivialSender   bool // the trivial sender instead of rpc.Conn.Notify
	trivialReceiver bool // the trivial reader instead of an rpc.Conn
	rates           []float64
}

// benchNotify alternates rounds in which a second process streams
// report_message notifications into this one: through rpc.Conn.Notify
// into an rpc.Conn (decoding each as the daemon would), or into the
// trivial reader; and, for reference, from the trivial sender into the
// trivial reader.
func benchNotify(cfg config, dir string) error {
	sides := []*noteSide{{name: "ours"}, {name: "trivial", trivialReceiver: true},
		{name: "trivial pair", trivialSender: true, trivialReceiver: true}}
	rounds := max(cfg.noteRounds, 1)
	for r := range rounds {
		for k := range sides {
			s := sides[(r+k)%len(sides)]
			rate, err := notifyRound(dir, cfg.notes, s)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.rates = append(s.rates, rate)
		}
	}
	b, _ := json.Marshal(payload(0))
	fmt.Printf("report_message notifications (params %d bytes), %d each in %d alternating rounds (ours, trivial: rpc.Conn.Notify sender):\n",
		len(b), cfg.notes, rounds)
	for _, s := range sides {
		v := s.rates
		slices.Sort(v)
		fmt.Printf("  %-13s %8.0f/s  %5.1f MB/s  (rounds %.0f..%.0f)\n", s.name, median(v), median(v)*float64(len(b))/1e6, v[0], v[len(v)-1])
	}
	fmt.Printf("  ratio         %.2f× trivial (target ≥ 0.80); vs trivial pair %.2f×\n",
		median(sides[0].rates)/median(sides[1].rates), median(sides[0].rates)/median(sides[2].rates))
	return nil
}

// notifyRound receives n notifications from a sender process and returns
// the rate from the first to the last.
func notifyRound(dir string, n int, s *noteSide) (float64, error) {
	sock := filepath.Join(dir, "daemon.sock")
	_ = os.Remove(sock)
	recv, err := newReceiver(sock, n, s.trivialReceiver)
	if err != nil {
		return 0, err
	}
	defer recv.close()
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	child := exec.Command(self, "--sender", sock, "--notifications", strconv.Itoa(n), "--trivial-sender="+strconv.FormatBool(s.trivialSender))
	if senderProfile != "" {
		child.Args = append(child.Args, "--cpuprofile", fmt.Sprintf("%s.%d", senderProfile, time.Now().UnixNano()))
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return 0, err
	}
	elapsed, err := recv.wait(60 * time.Second)
	recv.close() // the sender exits once we hang up
	_ = child.Wait()
	if err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

type receiver struct {
	ln      *net.UnixListener
	trivial bool
	conn    chan net.Conn
	rc      chan *rpc.Conn
	got     atomic.Int64
	first   atomic.Int64
	done    chan time.Duration
	n       int64
	gaps    atomic.Int64
	once    sync.Once
	served  sync.WaitGroup
}

func newReceiver(path string, n int, trivial bool) (*receiver, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	r := &receiver{
		ln: ln, trivial: trivial, conn: make(chan net.Conn, 1), rc: make(chan *rpc.Conn, 1),
		done: make(chan time.Duration, 1), n: int64(n),
	}
	r.served.Add(1)
	go r.accept()
	return r, nil
}

func (r *receiver) accept() {
	defer r.served.Done()
	nc, err := r.ln.Accept()
	if err != nil {
		return
	}
	r.conn <- nc
	if r.trivial {
		trivialRead(nc, r.count)
		return
	}
	mux := rpc.NewMux()
	mux.Register("report_message", rpc.Method(r.report))
	c := rpc.NewConn(nc, mux, rpc.Options{})
	r.rc <- c
	_ = c.Serve(context.Background())
}

// report decodes and checks the sequence, as the daemon's sink must.
func (r *receiver) report(_ context.Context, m reportMessage) (any, error) {
	r.count(m)
	return nil, nil
}

func (r *receiver) count(m reportMessage) {
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
		case c := <-r.rc:
			_ = c.Close()
		default:
		}
		select {
		case nc := <-r.conn:
			_ = nc.Close()
		default:
		}
		r.served.Wait()
	})
}

// send is the other process: it connects and streams n notifications.
func send(path string, n int, trivial bool) error {
	if trivial {
		return trivialSend(path, n)
	}
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
