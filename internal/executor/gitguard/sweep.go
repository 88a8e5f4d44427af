package gitguard

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/disabled"
)

// sweep is one look, when work ends, at what changed in a workspace
// since a time: it finds what changed by the tree (tree.go), judges it
// (judge.go), disables what it cannot show to be inert (disable.go), and
// keeps the tree up to date for the next round.
type sweep struct {
	root     string // absolute
	real     string // root with its symbolic links resolved, for where pointers lead
	since    time.Time
	skip     map[string]bool // relative paths held read-only, or put back by the caller
	w        *walker
	seen     int
	deadline time.Time
	bound    string // the bound reached, "" while within them
	found    []string
	recs     []disabled.Record
}

// run sweeps the tree, updating it, and the includes.
func (s *sweep) run(tree *node) {
	s.deadline = time.Now().Add(maxTime)
	if real, err := filepath.EvalSymlinks(s.root); err == nil {
		s.real = real
	} else {
		s.real = s.root
	}
	fd, err := unix.Open(s.root, dirFlags, 0)
	if err != nil {
		s.found = append(s.found, fmt.Sprintf(".: the workspace could not be opened to be looked at (%v): nothing it holds was judged", err))
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	if st.Ino != tree.ino || uint64(st.Dev) != tree.dev {
		*tree = node{name: s.root, dev: uint64(st.Dev), ino: st.Ino, place: plain, unlisted: true}
	}
	s.dir(fd, -1, tree, "", &st, 0)
	s.includes()
}

// tick counts one entry examined, and says whether the sweep is still
// within its bounds.
func (s *sweep) tick() bool {
	if s.bound != "" {
		return false
	}
	s.seen++
	switch {
	case s.seen > maxSeen:
		s.bound = fmt.Sprintf("more than %d entries to examine", maxSeen)
	case s.seen%64 == 0 && time.Now().After(s.deadline):
		s.bound = fmt.Sprintf("over the guard's %v", maxTime)
	}
	return s.bound == ""
}

// visit looks at a directory of the tree, open in pfd under its name,
// and says whether it is still there to keep.
func (s *sweep) visit(pfd int, n *node, rel string, depth int) bool {
	st, err := statAt(pfd, n.name)
	if err != nil || !isDir(&st) || st.Ino != n.ino || uint64(st.Dev) != n.dev {
		return false // gone, or replaced: its directory judges what is there now
	}
	changed := changedSince(&st, s.since)
	if !changed && (n.opaque || !n.unlisted && len(n.kids) == 0 && len(n.sens) == 0) {
		return true // nothing in it to look at: a stat is all it costs
	}
	fd, err := openDir(pfd, n.name)
	if err != nil {
		s.cut(pfd, n.name, rel, &st, fmt.Sprintf("it cannot be opened (%v)", err))
		return false
	}
	defer unix.Close(fd)
	n.opaque = false
	return s.dir(fd, pfd, n, rel, &st, depth)
}

// dir is visit's work on the open directory: what changed in it, and its
// own directories. It says whether the directory is still there to keep.
func (s *sweep) dir(fd, pfd int, n *node, rel string, st *unix.Stat_t, depth int) bool {
	var fresh []*node
	stopped := false
	switch {
	case n.unlisted:
		n.unlisted = false
		fresh, stopped = s.scan(fd, pfd, n, rel, depth)
	case changedSince(st, s.since):
		fresh, stopped = s.changed(fd, pfd, n, rel, depth)
	default:
		s.sensitive(fd, n, rel, depth)
	}
	if stopped { // a bound reached in it: the directory is cut, unfinished
		s.cut(pfd, n.name, rel, st, s.bound)
		return false
	}
	kids := n.kids[:0]
	for _, k := range n.kids {
		if s.visit(fd, k, join(rel, k.name), depth+1) {
			kids = append(kids, k)
		}
	}
	n.kids = append(kids, fresh...)
	return true
}

// changed looks at a directory whose entries changed: every entry that
// is new or changed since is judged whole, the rest left to the tree.
// A directory that became a git directory is judged whole. stopped says
// a bound was reached before it was done (in the workspace itself, the
// entries not examined are cut one by one instead).
func (s *sweep) changed(fd, pfd int, n *node, rel string, depth int) (fresh []*node, stopped bool) {
	ents, err := list(fd)
	if err != nil {
		s.cutListing(fd, pfd, n, rel, err)
		return nil, false
	}
	whole := false
	if isGitDir(namesOf(ents)) {
		whole = n.place != gitTop || s.anyChanged(fd, "HEAD", "objects", "refs", "commondir")
		n.place = gitTop
	}
	kids := map[string]*node{}
	for _, k := range n.kids {
		kids[k.name] = k
	}
	n.sens = nil
	for _, e := range ents {
		r, st, ok := s.entry(fd, n, rel, e.name)
		if !ok {
			continue
		}
		k := kids[e.name]
		known := k != nil && isDir(&st) && k.ino == st.Ino && k.dev == uint64(st.Dev)
		var kid *node
		switch {
		case known && whole:
			k.place = placeOf(n.place, k.name)
			_, stopped = s.take(fd, e.name, r, n.place, &st, depth, pfd)
		case known:
		case !whole && !changedSince(&st, s.since) && isDir(&st):
			kid = s.scanNew(fd, e.name, r, n.place, &st, depth)
		case !whole && !changedSince(&st, s.since):
		default:
			kid, stopped = s.take(fd, e.name, r, n.place, &st, depth, pfd)
		}
		if stopped {
			return nil, true
		}
		fresh = s.appendNode(fresh, kid)
		if k != nil && !known {
			n.kids = slices.DeleteFunc(n.kids, func(x *node) bool { return x == k })
		}
	}
	return fresh, false
}

// entry stats one entry of n (open as fd), for changed and scan, and
// notes it among n's sensitive files when its content counts; !ok: the
// sweep skips it, or it is gone.
func (s *sweep) entry(fd int, n *node, rel, name string) (r string, st unix.Stat_t, ok bool) {
	r = join(rel, name)
	st, err := statAt(fd, name)
	if s.skip[r] || err != nil {
		return r, st, false
	}
	if !isDir(&st) && kindOf(n.place, name) != inert {
		n.sens = append(n.sens, name)
	}
	return r, st, true
}

// take judges an entry of a directory the sweep looks at (whose parent
// is pfd): stopped when a bound stopped it, for the caller to cut the
// directory; in the workspace itself (pfd < 0) the entry is cut instead.
func (s *sweep) take(fd int, name, rel string, pp place, st *unix.Stat_t, depth, pfd int) (*node, bool) {
	n, stopped := s.examine(fd, name, rel, pp, st, depth)
	if stopped && pfd < 0 {
		s.cut(fd, name, rel, st, s.bound)
		return nil, false
	}
	return n, stopped
}

func (s *sweep) appendNode(to []*node, n *node) []*node {
	if n == nil {
		return to
	}
	return append(to, n)
}

// anyChanged says whether any of names in fd changed since.
func (s *sweep) anyChanged(fd int, names ...string) bool {
	for _, name := range names {
		if st, err := statAt(fd, name); err == nil && changedSince(&st, s.since) {
			return true
		}
	}
	return false
}

// sensitive judges the entries of an unchanged directory whose content
// counts and that changed since (written in place).
func (s *sweep) sensitive(fd int, n *node, rel string, depth int) {
	for _, name := range n.sens {
		if st, err := statAt(fd, name); err == nil && changedSince(&st, s.since) {
			s.judge(fd, name, join(rel, name), n.place, &st, depth)
		}
	}
}

// scan looks at a directory the tree does not know the inside of: all of
// it is listed, and what changed since is judged whole.
func (s *sweep) scan(fd, pfd int, n *node, rel string, depth int) (fresh []*node, stopped bool) {
	ents, err := list(fd)
	if err != nil {
		s.cutListing(fd, pfd, n, rel, err)
		return nil, false
	}
	if isGitDir(namesOf(ents)) {
		n.place = gitTop
	}
	n.kids, n.sens = nil, nil
	for _, e := range ents {
		r, st, ok := s.entry(fd, n, rel, e.name)
		if !ok {
			continue
		}
		var kid *node
		if changedSince(&st, s.since) {
			kid, stopped = s.take(fd, e.name, r, n.place, &st, depth, pfd)
		} else if isDir(&st) {
			kid = s.scanNew(fd, e.name, r, n.place, &st, depth)
		}
		if stopped {
			return nil, true
		}
		fresh = s.appendNode(fresh, kid)
	}
	return fresh, false
}

// scanNew scans an unchanged directory the tree did not have.
func (s *sweep) scanNew(pfd int, name, rel string, pp place, st *unix.Stat_t, depth int) *node {
	if !s.tick() {
		s.cut(pfd, name, rel, st, s.bound)
		return nil
	}
	if depth+1 > maxDepth {
		s.cut(pfd, name, rel, st, fmt.Sprintf("deeper than %d directories", maxDepth))
		return nil
	}
	fd, err := openDir(pfd, name)
	if err != nil {
		s.cut(pfd, name, rel, st, fmt.Sprintf("it cannot be opened (%v)", err))
		return nil
	}
	defer unix.Close(fd)
	n := &node{name: name, dev: uint64(st.Dev), ino: st.Ino, place: placeOf(pp, name)}
	kids, stopped := s.scan(fd, pfd, n, rel, depth+1)
	if stopped {
		s.cut(pfd, name, rel, st, s.bound)
		return nil
	}
	n.kids = kids
	return n
}

// cutListing disables a directory that could not be listed (the
// workspace itself is only reported).
func (s *sweep) cutListing(fd, pfd int, n *node, rel string, err error) {
	if pfd < 0 {
		s.found = append(s.found, fmt.Sprintf(".: the workspace could not be listed (%v): nothing it holds was judged", err))
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		s.cut(pfd, n.name, rel, &st, fmt.Sprintf("it cannot be listed (%v)", err))
	}
}
