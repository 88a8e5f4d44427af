package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/apiwire"
)

func sized(task string, seq int64, n int) apiwire.StoredEvent {
	e := ev(task, seq)
	e.Data = json.RawMessage(`{"text":"` + strings.Repeat("x", n-11) + `"}`)
	return e
}

// TestBounds: past a task's bound its next event is replaced by a notice
// naming the quota, later ones are received (no gap) but not kept, and
// Exceeded hears of it once; a person's bound counts every task of
// theirs, running ones and what the store already holds, and not
// another person's.
func TestBounds(t *testing.T) {
	s, st, _ := newSink()
	type hit struct{ task, who, quota string }
	var hits []hit
	held := map[Owner]int64{{"alice", 1001}: 500}
	s.SetBounds(Bounds{PerTask: 1000, PerUser: 2000,
		Held:     func(o Owner) (int64, error) { return held[o], nil },
		Exceeded: func(task string, o Owner, quota string) { hits = append(hits, hit{task, o.Name, quota}) }})
	alice, bob := Owner{"alice", 1001}, Owner{"bob", 1002}
	for _, task := range []string{"a1", "a2", "a3"} {
		s.Begin(task, alice)
	}
	s.Begin("b1", bob)
	put := func(e apiwire.StoredEvent, want Outcome) {
		t.Helper()
		if out, err := s.Put(e); err != nil || out != want {
			t.Fatalf("Put %s/%d: %v %v; want %v", e.TaskID, e.Sequence, out, err, want)
		}
	}
	put(sized("a1", 0, 600), Stored)
	put(sized("a1", 1, 600), Capped) // 1200 > the task's 1000: the notice
	put(sized("a1", 2, 20), Capped)  // nothing more
	put(sized("a2", 0, 600), Stored) // alice: 500 held + 600 + the notice + 600
	put(sized("a3", 0, 300), Capped) // past her 2000
	put(sized("b1", 0, 900), Stored) // bob is not alice
	if len(hits) != 2 || hits[0] != (hit{"a1", "alice", QuotaPerTask}) || hits[1] != (hit{"a3", "alice", QuotaPerUser}) {
		t.Errorf("Exceeded heard %v", hits)
	}
	if m := s.Missing("a1"); len(m) != 0 {
		t.Errorf("a capped task has gaps %v", m)
	}
	var notices int
	for _, e := range st.Events {
		if e.Type == "error" && strings.Contains(string(e.Data), ReasonEventQuota) {
			notices++
		}
	}
	if len(st.Events) != 5 || notices != 2 {
		t.Errorf("stored %d events, %d notices; want 5, 2", len(st.Events), notices)
	}
	held[alice] = 0 // retention removed her old tasks
	s.Recount()
	s.Begin("a4", alice)
	put(sized("a4", 0, 100), Stored)
}
