package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agor-sh/agor/internal/daemon/events"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func ev(task string, seq int64) apiwire.StoredEvent {
	return apiwire.StoredEvent{TaskID: task, Sequence: seq, Timestamp: 1_700_000_000_000 + seq, Type: "agent_message",
		Data: json.RawMessage(fmt.Sprintf(`{"text":"chunk %d"}`, seq))}
}

func evs(task string, from, to int64) []apiwire.StoredEvent {
	var out []apiwire.StoredEvent
	for q := from; q <= to; q++ {
		out = append(out, ev(task, q))
	}
	return out
}

func TestAppendExactlyOnce(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, Running, "t1", "t2")
	for _, e := range evs("t1", 0, 4) {
		if err := db.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	changed := ev("t1", 2)
	changed.Data = json.RawMessage(`{"text":"replayed"}`)
	noData := apiwire.StoredEvent{TaskID: "t2", Sequence: 0, Type: "started"}
	for _, tc := range []struct {
		name string
		ev   apiwire.StoredEvent
		want error
	}{
		{"duplicate", ev("t1", 3), ErrDuplicate},
		{"duplicate with other data keeps the first", changed, ErrDuplicate},
		{"same sequence, other task", ev("t2", 3), nil},
		{"no data", noData, nil},
		{"unknown task", ev("nope", 0), ErrNotFound},
		{"data not JSON", apiwire.StoredEvent{TaskID: "t2", Sequence: 9, Data: json.RawMessage("{")}, ErrInvalid},
		{"negative sequence", apiwire.StoredEvent{TaskID: "t2", Sequence: -1}, ErrInvalid},
		{"no task", apiwire.StoredEvent{Sequence: 1}, ErrInvalid},
	} {
		if err := db.Append(tc.ev); !errors.Is(err, tc.want) {
			t.Errorf("%s: Append err = %v, want %v", tc.name, err, tc.want)
		}
	}
	got, err := db.Events("t1", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(evs("t1", 0, 4), got); d != "" {
		t.Errorf("t1 events (-want +got):\n%s", d)
	}
	got, _ = db.Events("t2", -1, 0)
	if d := cmp.Diff([]apiwire.StoredEvent{noData, ev("t2", 3)}, got); d != "" {
		t.Errorf("t2 events (-want +got):\n%s", d)
	}
}

func TestEventsReplay(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, Running, "t1", "t2")
	// Out of order, with a gap at 5, and a neighbour task.
	for _, q := range []int64{3, 0, 1, 2, 9, 4, 6, 8, 7} {
		if err := db.Append(ev("t1", q)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.AppendBatch(evs("t2", 0, 20)); err != nil {
		t.Fatal(err)
	}
	all := append(evs("t1", 0, 4), evs("t1", 6, 9)...)
	for _, tc := range []struct {
		after int64
		limit int
		want  []apiwire.StoredEvent
	}{
		{-1, 0, all},
		{-1, 3, all[:3]},
		{2, 0, all[3:]},
		{4, 2, evs("t1", 6, 7)},
		{5, 0, evs("t1", 6, 9)},
		{9, 0, nil},
		{100, 10, nil},
	} {
		t.Run(fmt.Sprintf("after%d/limit%d", tc.after, tc.limit), func(t *testing.T) {
			got, err := db.Events("t1", tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Events (-want +got):\n%s", d)
			}
		})
	}
	// Paging through with the last sequence seen returns each event once.
	var got []apiwire.StoredEvent
	for after := int64(-1); ; {
		page, err := db.Events("t2", after, 6)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Sequence
	}
	if d := cmp.Diff(evs("t2", 0, 20), got); d != "" {
		t.Errorf("paged replay (-want +got):\n%s", d)
	}
}

func TestAppendBatch(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	seed(t, db, Running, "t1")
	if n, err := db.AppendBatch(evs("t1", 0, 9)); err != nil || n != 10 {
		t.Fatalf("AppendBatch = %d, %v; want 10", n, err)
	}
	// Overlapping batch: only the new events count, duplicates in the batch too.
	batch := append(evs("t1", 5, 14), ev("t1", 12))
	if n, err := db.AppendBatch(batch); err != nil || n != 5 {
		t.Fatalf("overlapping AppendBatch = %d, %v; want 5", n, err)
	}
	// A batch with an event for an unknown task stores nothing.
	bad := append(evs("t1", 15, 19), ev("nope", 0))
	if _, err := db.AppendBatch(bad); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AppendBatch with unknown task: err = %v, want ErrNotFound", err)
	}
	got, _ := db.Events("t1", -1, 0)
	if d := cmp.Diff(evs("t1", 0, 14), got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// TestSink runs the events.Sink on the store, as the daemon will: the sink
// drops duplicates it has seen; after a restart (a new sink, same file) a
// resent event reaches the store, which refuses it.
func TestSink(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/agor.db"
	db := openTest(t, path)
	seed(t, db, Running, "t1")
	sink := events.NewSink(db, nil)
	sub := sink.Subscribe("t1", 10)
	defer sub.Close()
	for _, tc := range []struct {
		ev   apiwire.StoredEvent
		want events.Outcome
	}{
		{ev("t1", 0), events.Stored},
		{ev("t1", 1), events.Stored},
		{ev("t1", 1), events.Duplicate},
		{ev("t1", 3), events.Stored}, // gap at 2
		{ev("t1", 2), events.Stored},
		{ev("t1", 0), events.Duplicate},
	} {
		got, err := sink.Put(tc.ev)
		if err != nil || got != tc.want {
			t.Errorf("Put %d = %v, %v; want %v", tc.ev.Sequence, got, err, tc.want)
		}
	}
	stored, _ := db.Events("t1", -1, 0)
	if d := cmp.Diff(evs("t1", 0, 3), stored); d != "" {
		t.Errorf("stored (-want +got):\n%s", d)
	}
	published, _ := sub.Next()
	var seqs []int64
	for _, e := range published {
		seqs = append(seqs, e.Sequence)
	}
	if d := cmp.Diff([]int64{0, 1, 3, 2}, seqs); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}

	restarted := events.NewSink(db, nil)
	// The store refuses it as ErrDuplicate, and the sink reports that as
	// Duplicate: stored once, no failure.
	if out, err := restarted.Put(ev("t1", 2)); err != nil || out != events.Duplicate {
		t.Errorf("Put after restart of a stored event = %v, %v; want Duplicate", out, err)
	}
	if out, err := restarted.Put(ev("t1", 4)); err != nil || out != events.Stored {
		t.Errorf("Put after restart of a new event = %v, %v", out, err)
	}
}

// TestConcurrentAppend has many goroutines append events of their own
// tasks while others replay: every event is stored once, in order.
func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	db := openTest(t, "")
	const tasks, perTask = 16, 200
	var ids []string
	for i := range tasks {
		ids = append(ids, fmt.Sprintf("t%02d", i))
	}
	seed(t, db, Running, ids...)
	var wg sync.WaitGroup
	errs := make(chan error, 2*tasks)
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for q := range int64(perTask) {
				var err error
				if i%2 == 0 {
					err = db.Append(ev(id, q))
				} else if q%10 == 0 {
					_, err = db.AppendBatch(evs(id, q, q+9))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // a reader following the task while it is written
			defer wg.Done()
			after := int64(-1)
			for after < perTask-1 {
				page, err := db.Events(id, after, 50)
				if err != nil {
					errs <- err
					return
				}
				if len(page) == 0 {
					time.Sleep(time.Millisecond) // let the writer on
				}
				for _, e := range page {
					if e.Sequence != after+1 {
						errs <- fmt.Errorf("%s: read %d after %d", id, e.Sequence, after)
						return
					}
					after = e.Sequence
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, id := range ids {
		got, err := db.Events(id, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(evs(id, 0, perTask-1), got); d != "" {
			t.Errorf("%s (-want +got):\n%s", id, d)
		}
	}
	if err := db.Check(); err != nil {
		t.Error(err)
	}
}
