package store

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAppend measures events committed per second through the single
// writer: one transaction per event (Append, the events.Store path) and
// one per batch (AppendBatch).
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db := openTest(b, "")
			seed(b, db, Running, "t1")
			buf := evs("t1", 0, int64(batch-1))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				for j := range buf {
					buf[j].Sequence = int64(i + j)
				}
				var err error
				if batch == 1 {
					err = db.Append(buf[0])
				} else {
					_, err = db.AppendBatch(buf)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkEvents measures replay: reading a 10,000-event task back in
// pages of 500.
func BenchmarkEvents(b *testing.B) {
	const total, page = 10_000, 500
	db := openTest(b, "")
	seed(b, db, Running, "t1")
	if _, err := db.AppendBatch(evs("t1", 0, total-1)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	read := 0
	for b.Loop() {
		for after := int64(-1); after < total-1; {
			got, err := db.Events("t1", after, page)
			if err != nil {
				b.Fatal(err)
			}
			after = got[len(got)-1].Sequence
			read += len(got)
		}
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRetention loads 1,000,000 events (1,000 ended tasks of 1,000
// small events, 900 of them past the age) and runs one sweep: the store's
// size before and after and the sweep's time are printed.
func BenchmarkRetention(b *testing.B) {
	for range b.N {
		db := openTest(b, "")
		old, recent := now().Add(-40*24*time.Hour), now()
		n := 1000            // tasks of 999 events: 1M events
		if testing.Short() { // make bench-smoke: that it runs, not its figures
			n = 50
		}
		buf := evs("x", 0, 999)
		for i := range n {
			ended := old
			if i >= n*9/10 {
				ended = recent
			}
			sid, id := fmt.Sprintf("s%d", i), fmt.Sprintf("t%d", i)
			if _, err := db.CreateSession(Session{ID: sid, UnixUser: "alice", UID: 1000, AgenticTool: "claude-code", Cwd: "/", UpdatedAt: recent}); err != nil {
				b.Fatal(err)
			}
			if _, err := db.CreateTask(Task{ID: id, SessionID: sid, UnixUser: "alice", UID: 1000, Prompt: "p", Status: Completed, CreatedAt: ended, EndedAt: ended}); err != nil {
				b.Fatal(err)
			}
			for j := range buf {
				buf[j].TaskID = id
			}
			if _, err := db.AppendBatch(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Vacuum(); err != nil {
			b.Fatal(err)
		}
		month := 30 * 24 * time.Hour
		sw, err := db.Sweep(Retention{EventMaxAge: month, TaskMaxAge: month})
		if err != nil || sw.Events != int64(n*9/10)*1000 {
			b.Fatalf("swept %+v: %v", sw, err)
		}
		b.ReportMetric(float64(sw.BytesBefore)/(1<<20), "MiB-before")
		b.ReportMetric(float64(sw.BytesAfter)/(1<<20), "MiB-after")
		b.ReportMetric(sw.Took.Seconds(), "s-sweep")
		b.ReportMetric(float64(sw.Events)/sw.Took.Seconds(), "events-removed/s")
	}
}
