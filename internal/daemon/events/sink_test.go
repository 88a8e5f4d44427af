package events

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func newSink() (*Sink, *MemoryStore, *bytes.Buffer) {
	st := &MemoryStore{}
	var logs bytes.Buffer
	return NewSink(st, slog.New(slog.NewTextHandler(&logs, nil))), st, &logs
}

func ev(task string, seq int64) apiwire.StoredEvent {
	return apiwire.StoredEvent{TaskID: task, Sequence: seq, Type: "text_delta"}
}

func seqs(es []apiwire.StoredEvent) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.Sequence)
	}
	return out
}

func TestExactlyOnceAndGaps(t *testing.T) {
	tests := []struct {
		name    string
		in      []int64
		stored  []int64
		dups    int
		missing []Range
		gapLog  bool // a gap was seen on the way, even if filled later
	}{
		{"in order", []int64{0, 1, 2, 3}, []int64{0, 1, 2, 3}, 0, nil, false},
		{"duplicates", []int64{0, 1, 1, 0, 2, 2}, []int64{0, 1, 2}, 3, nil, false},
		{"reordered", []int64{1, 0, 3, 2}, []int64{1, 0, 3, 2}, 0, nil, true},
		{"gap", []int64{0, 1, 4, 5}, []int64{0, 1, 4, 5}, 0, []Range{{From: 2, To: 3}}, true},
		{"two gaps then one filled", []int64{0, 2, 5, 1}, []int64{0, 2, 5, 1}, 0, []Range{{From: 3, To: 4}}, true},
		{"missing start", []int64{3}, []int64{3}, 0, []Range{{From: 0, To: 2}}, true},
		{"duplicate ahead of a gap", []int64{0, 3, 3}, []int64{0, 3}, 1, []Range{{From: 1, To: 2}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, st, logs := newSink()
			dups := 0
			for _, q := range tc.in {
				out, err := s.Put(ev("t1", q))
				if err != nil {
					t.Fatal(err)
				}
				if out == Duplicate {
					dups++
				}
			}
			if diff := cmp.Diff(tc.stored, seqs(st.Events)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
			if dups != tc.dups {
				t.Errorf("%d duplicates, want %d", dups, tc.dups)
			}
			if diff := cmp.Diff(tc.missing, s.Missing("t1")); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			if gapLogged := strings.Contains(logs.String(), "event sequence gap"); gapLogged != tc.gapLog {
				t.Errorf("gap logged = %v, want %v:\n%s", gapLogged, tc.gapLog, logs)
			}
		})
	}
}

func TestTasksAreIndependentAndEndForgets(t *testing.T) {
	s, st, logs := newSink()
	for _, e := range []apiwire.StoredEvent{ev("a", 0), ev("b", 0), ev("a", 1), ev("b", 2)} {
		if _, err := s.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.Events) != 4 {
		t.Fatalf("stored %d, want 4", len(st.Events))
	}
	if gaps := s.End("b"); !cmp.Equal(gaps, []Range{{From: 1, To: 1}}) || !strings.Contains(logs.String(), "lost events") {
		t.Fatalf("End(b) = %v; logs:\n%s", gaps, logs)
	}
	if gaps := s.End("a"); gaps != nil {
		t.Fatalf("End(a) = %v", gaps)
	}
}

func TestInvalidAndStoreErrors(t *testing.T) {
	s, _, _ := newSink()
	for _, e := range []apiwire.StoredEvent{{TaskID: "", Sequence: 0}, {TaskID: "t", Sequence: -1}} {
		if _, err := s.Put(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Put(%+v) = %v, want ErrInvalid", e, err)
		}
	}
	failing := NewSink(failStore{}, nil)
	for i := range 3 {
		if _, err := failing.Put(ev("t", int64(i))); err == nil {
			t.Fatal("store failure not reported")
		}
	}
	// Counted as lost, with the store's first error, and not as a gap:
	// it was received. The store taking events again takes the next.
	failing.store = &MemoryStore{}
	if out, err := failing.Put(ev("t", 3)); err != nil || out != Stored {
		t.Fatalf("after the store failed: %v, %v", out, err)
	}
	if l := failing.Lost("t"); l.Events != 3 || l.Err == nil || !strings.Contains(l.Err.Error(), "disk full") {
		t.Errorf("lost %+v, want 3 events and the store's error", l)
	}
	if gaps := failing.End("t"); gaps != nil {
		t.Errorf("lost events reported as gaps too: %v", gaps)
	}
}

type failStore struct{}

func (failStore) Append(apiwire.StoredEvent) error { return errors.New("disk full") }

func TestConcurrentDuplicatesStoredOnce(t *testing.T) {
	s, st, _ := newSink()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := range int64(500) {
				_, _ = s.Put(ev("t", q))
			}
		}()
	}
	wg.Wait()
	if len(st.Events) != 500 || s.Missing("t") != nil {
		t.Fatalf("stored %d events (want 500), missing %v", len(st.Events), s.Missing("t"))
	}
}

func TestSubscribers(t *testing.T) {
	s, _, _ := newSink()
	fast := s.Subscribe("t", 100)
	slow := s.Subscribe("t", 2)
	other := s.Subscribe("u", 10)
	for q := range int64(5) {
		_, _ = s.Put(ev("t", q))
	}
	fast.Close()
	<-fast.Ready()
	evs, open := fast.Next()
	var got []int64
	for _, e := range evs {
		got = append(got, e.Sequence)
	}
	if diff := cmp.Diff([]int64{0, 1, 2, 3, 4}, got); diff != "" || open {
		t.Errorf("fast subscriber, open=%v (-want +got):\n%s", open, diff)
	}
	evs, open = slow.Next()
	if !slow.Lagged() || len(evs) != 2 || open {
		t.Errorf("slow subscriber: lagged=%v after %d events, open=%v; want cut off after 2", slow.Lagged(), len(evs), open)
	}
	s.End("u")
	<-other.Ready()
	if evs, open := other.Next(); open || len(evs) != 0 || other.Lagged() {
		t.Error("End did not close the task's subscription cleanly")
	}
}

// TestSubscriberQueueGrowsOnDemand: an idle follower holds no buffer;
// one that falls behind holds what waits, up to its bound.
func TestSubscriberQueueGrowsOnDemand(t *testing.T) {
	s, _, _ := newSink()
	sub := s.Subscribe("t", 4096)
	defer sub.Close()
	if cap(sub.queue) != 0 {
		t.Fatalf("idle follower holds %d slots", cap(sub.queue))
	}
	for q := range int64(10) {
		_, _ = s.Put(ev("t", q))
	}
	evs, open := sub.Next()
	if len(evs) != 10 || !open || cap(evs) > 32 {
		t.Fatalf("took %d events (cap %d), open=%v", len(evs), cap(evs), open)
	}
	if evs, _ := sub.Next(); len(evs) != 0 {
		t.Fatalf("taken twice: %d", len(evs))
	}
}

// Continue: a new daemon taking a task over from sequence 3 on sees no
// gap below it, and what it is sent again is a duplicate, not stored.
func TestSinkContinue(t *testing.T) {
	s, _, logs := newSink()
	s.Continue("t", 3)
	for _, seq := range []int64{3, 4} {
		if out, err := s.Put(apiwire.StoredEvent{TaskID: "t", Sequence: seq, Data: []byte(`{}`)}); err != nil || out != Stored {
			t.Fatalf("Put %d = %v, %v", seq, out, err)
		}
	}
	if m := s.Missing("t"); len(m) != 0 || strings.Contains(logs.String(), "gap") {
		t.Errorf("missing %v after Continue(3); logs %s", m, logs)
	}
	if out, _ := s.Put(apiwire.StoredEvent{TaskID: "t", Sequence: 1, Data: []byte(`{}`)}); out != Duplicate {
		t.Errorf("an event below the take-over: %v, want Duplicate", out)
	}
}
