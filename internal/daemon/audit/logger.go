package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"time"
)

// Defaults for Options.
const (
	DefaultKeep   = 10_000
	DefaultWindow = time.Second
)

// Options configure a Logger. The zero value logs to slog.Default and
// memory only.
type Options struct {
	// Path is the JSON-lines file records are appended to (for example
	// /var/lib/agor/audit.jsonl); "" keeps no file.
	Path string
	// Keep bounds the records held for Query (default 10,000).
	Keep int
	// Window is how often aggregated records are emitted and the file is
	// synced to disk (default 1 s).
	Window time.Duration
	// Log receives every record as a structured entry.
	Log *slog.Logger
	// MaxBytes rotates the file past this size (0: never); rotated files
	// older than MaxAge are removed (0: kept). rotate.go.
	MaxBytes int64
	MaxAge   time.Duration
}

// Logger writes the audit trail. It is safe for concurrent use; Close it
// to stop its background flusher and sync the file.
type Logger struct {
	log    *slog.Logger
	keep   int
	now    func() time.Time
	window time.Duration

	path     string
	maxBytes int64
	maxAge   time.Duration

	mu      sync.Mutex
	file    *os.File
	size    int64 // of file, for rotation
	dirty   bool  // written since the last sync
	fileErr error // first write error, reported by Flush and Close
	ring    []Record
	next    int             // where the next record goes once ring is full
	agg     map[Record]*int // aggregation key (Time and Count zero) -> count
	first   map[Record]time.Time

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// Open starts a Logger, creating or appending to opts.Path.
func Open(opts Options) (*Logger, error) {
	l := &Logger{
		log: opts.Log, keep: opts.Keep, window: opts.Window, now: time.Now,
		agg: map[Record]*int{}, first: map[Record]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{}),
		path: opts.Path, maxBytes: opts.MaxBytes, maxAge: opts.MaxAge,
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.keep <= 0 {
		l.keep = DefaultKeep
	}
	if l.window <= 0 {
		l.window = DefaultWindow
	}
	if opts.Path != "" {
		// 0600: the trail names users, tasks and tools; only the daemon reads it.
		f, err := os.OpenFile(opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open audit file: %w", err)
		}
		l.file, l.size = f, fileSize(f)
		l.rotateLocked()
		l.pruneLocked()
	}
	go l.flusher()
	return l, nil
}

// Log records r now (Time is set when zero).
func (l *Logger) Log(r Record) {
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	line, err := json.Marshal(r)
	if err != nil { // cannot happen: Record holds only strings, a time and an int
		line = nil
	}
	l.mu.Lock()
	l.remember(r)
	l.writeLocked(line)
	l.mu.Unlock()
	l.log.LogAttrs(context.Background(), r.level(), "audit "+string(r.Action), r.attrs()...)
}

// Aggregate counts r into one record per distinct r per window, so a flood
// of ten thousand refusals leaves one line with Count, not ten thousand.
func (l *Logger) Aggregate(r Record) { l.AggregateN(r, 1) }

// maxAggregateN bounds what one AggregateN adds (what a peer says it
// saw), so that no sum in a window overflows.
const maxAggregateN = 1 << 20

// AggregateN is Aggregate for n occurrences at once (a count another
// part summed), n at most 1<<20.
func (l *Logger) AggregateN(r Record, n int) {
	n = min(max(n, 1), maxAggregateN)
	r.Time, r.Count = time.Time{}, 0
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.agg[r]; c != nil {
		*c = min(*c+n, math.MaxInt32)
		return
	}
	l.agg[r] = &n
	l.first[r] = l.now()
}

func (l *Logger) remember(r Record) {
	if len(l.ring) < l.keep {
		l.ring = append(l.ring, r)
		return
	}
	l.ring[l.next] = r
	l.next = (l.next + 1) % l.keep
}

// writeLocked appends one line. Each record is one write(2), so a daemon
// crash loses nothing already logged; fsync waits for the flusher.
func (l *Logger) writeLocked(line []byte) {
	if l.file == nil || line == nil {
		return
	}
	n, err := l.file.Write(append(line, '\n'))
	if err != nil && l.fileErr == nil {
		l.fileErr = fmt.Errorf("write audit file: %w", err)
		l.log.Error("audit file write failed; records still go to the journal", "err", err)
	}
	l.size += int64(n)
	l.dirty = true
	l.rotateLocked()
}

func (l *Logger) flusher() {
	defer close(l.done)
	t := time.NewTicker(l.window)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			_ = l.Flush() // errors are logged when they happen
		}
	}
}

// Flush emits the aggregated records collected so far and syncs the file.
func (l *Logger) Flush() error {
	for _, r := range l.takeAggregates() {
		l.Log(r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil && l.dirty {
		l.dirty = false
		if err := l.file.Sync(); err != nil && l.fileErr == nil {
			l.fileErr = fmt.Errorf("sync audit file: %w", err)
		}
	}
	return l.fileErr
}

func (l *Logger) takeAggregates() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.agg))
	for k, n := range l.agg {
		k.Time, k.Count = l.first[k], *n
		out = append(out, k)
	}
	clear(l.agg)
	clear(l.first)
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Close stops the flusher, emits what is aggregated, and syncs and closes
// the file. Records logged afterwards reach slog and memory only.
func (l *Logger) Close() error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	err := l.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return err
	}
	cerr := l.file.Close()
	l.file = nil
	return errors.Join(err, cerr)
}

// Query returns the kept records that match f, oldest first.
func (l *Logger) Query(f Filter) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Record
	for i := range l.ring {
		if r := l.ring[(l.next+i)%len(l.ring)]; f.match(r) {
			out = append(out, r)
		}
	}
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out
}
