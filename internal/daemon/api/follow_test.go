package api

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agor-sh/agor/internal/config"
	"github.com/agor-sh/agor/internal/daemon/store"
	"github.com/agor-sh/agor/internal/wire/apiwire"
)

// TestFollowerThatLagsCatchesUp: a client that stops reading while a task
// produces far more than a follower's bound is cut from the live feed,
// follows anew and catches up from the store: every event once, in
// order, then the end.
func TestFollowerThatLagsCatchesUp(t *testing.T) {
	e := newQuotaEnv(t, config.Quotas{}, 0)
	task := e.liveTask(t, "alice", alice)
	resp := e.openStream(t, alice, task)
	defer resp.Body.Close()
	const n = 3 * liveBound
	data := []byte(`{"text":"` + strings.Repeat("x", 200) + `"}`)
	for q := range int64(n) { // nobody reads meanwhile: the socket fills, the queue passes its bound
		if _, err := e.srv.Events.Put(apiwire.StoredEvent{TaskID: task, Sequence: q, Timestamp: 1, Type: "text_delta", Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = e.db.SetTaskStatus(task, store.Completed, nil, "")
		e.srv.Events.End(task)
	}()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	next, ended := int64(0), false
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			if got, _ := strconv.ParseInt(id, 10, 64); got != next {
				t.Fatalf("event %d after %d", got, next-1)
			}
			next++
		}
		if line == "event: end" {
			ended = true
			break
		}
	}
	if next != n || !ended {
		t.Fatalf("%d of %d events, ended %v", next, n, ended)
	}
}
