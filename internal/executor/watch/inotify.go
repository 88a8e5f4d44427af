package watch

import (
	"os"
	"path"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/executor/fsroot"
	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_ONLYDIR

// watcher is one inotify instance serving one watch.
type watcher struct {
	root      *fsroot.Root
	conn      *rpc.Conn
	id        string
	recursive bool
	maxDirs   int
	f         *os.File // the inotify descriptor, non-blocking, on Go's poller

	mu      sync.Mutex
	wds     map[int32]string // watch descriptor -> directory, relative to root
	pending []protocol.FileEvent
	seen    map[protocol.FileEvent]bool

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newWatcher(root *fsroot.Root, conn *rpc.Conn, id string, p protocol.WatchParams, maxDirs int, coalesce time.Duration) (*watcher, error) {
	rel, err := root.Rel(p.Path)
	if err != nil {
		return nil, watchErr(err)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonInotify, "inotify: %v", err)
	}
	w := &watcher{
		root: root, conn: conn, id: id, recursive: p.Recursive, maxDirs: maxDirs,
		f: os.NewFile(uintptr(fd), "inotify"), wds: map[int32]string{}, seen: map[protocol.FileEvent]bool{}, done: make(chan struct{}),
	}
	if err := w.addTree(path.Clean(rel), false); err != nil {
		w.f.Close()
		return nil, err
	}
	w.wg.Add(2)
	go func() { defer w.wg.Done(); w.read() }()
	go func() { defer w.wg.Done(); w.flushEvery(coalesce) }()
	return w, nil
}

// addDir watches one directory, opened beneath the root and named to
// inotify by its descriptor, so nothing outside the root can be watched.
func (w *watcher) addDir(rel string) error {
	w.mu.Lock()
	n := len(w.wds)
	w.mu.Unlock()
	if n >= w.maxDirs {
		return rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonTooManyDirectories, "a watch covers at most %d directories", w.maxDirs)
	}
	d, err := w.root.OpenFile(rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return watchErr(err)
	}
	defer d.Close()
	wd, err := unix.InotifyAddWatch(int(w.f.Fd()), "/proc/self/fd/"+strconv.Itoa(int(d.Fd())), mask)
	if err != nil {
		return rpc.Errorf(protocol.CodeLimitReached, protocol.ReasonInotify, "watch %s: %v", rel, err)
	}
	w.mu.Lock()
	w.wds[int32(wd)] = rel
	w.mu.Unlock()
	return nil
}

// addTree watches dir and, when recursive, its subdirectories. With
// report, files already there are announced as created: they appeared
// before the watch on their new directory could see them.
func (w *watcher) addTree(dir string, report bool) error {
	if err := w.addDir(dir); err != nil {
		return err
	}
	if !w.recursive && !report {
		return nil
	}
	d, err := w.root.OpenDir(dir)
	if err != nil {
		return watchErr(err)
	}
	ents, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range ents {
		child := path.Join(dir, e.Name())
		if report {
			w.queue(protocol.FileEvent{WatchID: w.id, Path: child, Op: "create"})
		}
		if w.recursive && e.IsDir() {
			if err := w.addTree(child, report); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *watcher) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed by stop
		}
		w.parse(buf[:n])
	}
}

func (w *watcher) parse(buf []byte) {
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
		off += unix.SizeofInotifyEvent + int(ev.Len)
		w.handle(ev.Wd, ev.Mask, cstring(nameBytes))
	}
}

func (w *watcher) handle(wd int32, m uint32, name string) {
	if m&unix.IN_Q_OVERFLOW != 0 {
		w.queue(protocol.FileEvent{WatchID: w.id, Op: "overflow"})
		return
	}
	w.mu.Lock()
	dir, ok := w.wds[wd]
	if m&unix.IN_IGNORED != 0 {
		delete(w.wds, wd)
	}
	w.mu.Unlock()
	if !ok || m&unix.IN_IGNORED != 0 {
		return
	}
	p := path.Join(dir, name)
	switch {
	case m&unix.IN_CREATE != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: p, Op: "create"})
		if m&unix.IN_ISDIR != 0 && w.recursive {
			_ = w.addTree(p, true) // over the limit: the rest is not watched
		}
	case m&unix.IN_MOVED_TO != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: p, Op: "rename"})
		if m&unix.IN_ISDIR != 0 && w.recursive {
			_ = w.addTree(p, true)
		}
	case m&unix.IN_MODIFY != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: p, Op: "modify"})
	case m&unix.IN_DELETE != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: p, Op: "delete"})
	case m&unix.IN_MOVED_FROM != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: p, Op: "rename"})
	case m&unix.IN_DELETE_SELF != 0:
		w.queue(protocol.FileEvent{WatchID: w.id, Path: dir, Op: "delete"})
	}
}

// queue adds an event unless the same one is already waiting: a burst
// of writes to one file is one modify.
func (w *watcher) queue(e protocol.FileEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[e] {
		return
	}
	w.seen[e] = true
	w.pending = append(w.pending, e)
}

func (w *watcher) flushEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.flush()
		}
	}
}

func (w *watcher) flush() {
	w.mu.Lock()
	batch := w.pending
	w.pending, w.seen = nil, map[protocol.FileEvent]bool{}
	w.mu.Unlock()
	for _, e := range batch {
		if w.conn.Notify(protocol.MethodFileEvent, e) != nil {
			return
		}
	}
}

func (w *watcher) stop() {
	w.once.Do(func() {
		close(w.done)
		w.f.Close() // wakes the reader
		w.wg.Wait()
	})
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
