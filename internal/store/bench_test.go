package store

import (
	"fmt"
	"testing"
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
