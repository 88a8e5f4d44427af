package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What changed is known by the kernel's own stamp rather than found by a
// bounded walk: an inode's ctime is set to the clock on every change of
// its content, mode, links or name (rename stamps the inode it moves),
// and nothing a confined task may call sets it back (no CAP_SYS_TIME,
// utimensat sets atime and mtime only). A directory's ctime moves when
// an entry is added, removed or renamed in it, not when a file in it is
// written. So the guard keeps the workspace's directories (the snapshot
// walks them once, each later sweep keeps the tree up to date) and, of
// each, the entries whose content counts (a config, a hook, settings: a
// few). A sweep stats each directory and each such entry, lists only the
// directories that changed, and examines only what changed in them and
// what is new: the cost is a stat a directory (files are most of a tree
// and cost nothing) plus what changed.
//
// Not chosen: inotify would make the sweep cost what changed alone, but
// it needs a watch a directory, from a per-person limit her editor's
// watchers share, pins each directory's inode in kernel memory charged
// to her, and loses events on overflow, which would have to fall back to
// this anyway; fanotify's filesystem marks need CAP_SYS_ADMIN, which the
// executor does not have; an overlay as the task's writable layer would
// name exactly what changed, but would hide the task's edits from her
// until it ends, which interactive sessions cannot have, and would need
// its changes merged back.

// node is a directory the guard knows of at a round's start.
type node struct {
	name     string
	dev, ino uint64
	place    place
	sens     []string // its entries that are not directories and whose content counts
	kids     []*node
	unlisted bool // beyond the bounds when it was walked: the sweep looks at all of it
	opaque   bool // it could not be opened: nor could the task (it runs as her)
}

// Bounds of the walk and of a sweep; tests lower them.
var (
	maxDirs  = 250_000          // directories the guard keeps (about 100 bytes each)
	maxDepth = 256              // directories deep
	maxSeen  = 2_000_000        // entries a sweep examines
	maxTime  = 20 * time.Second // a sweep's time
	maxFile  = 1 << 20          // a config, a todo, .gitmodules: read whole or judged unreadable
)

// include is a file in the workspace that a config of it includes.
type include struct{ path, by string }

// walker makes the tree of a workspace.
type walker struct {
	root     string // absolute
	skip     map[string]bool
	dirs     int
	includes []include
}

// walk makes the tree of the workspace from its root.
func (w *walker) walk() *node {
	n := &node{name: w.root, place: plain}
	fd, err := unix.Open(w.root, dirFlags, 0)
	if err != nil {
		n.unlisted = true
		return n
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		n.dev, n.ino = uint64(st.Dev), st.Ino
	}
	w.fill(fd, n, "", 0)
	return n
}

// fill lists the directory open as fd into n, and those beneath it.
func (w *walker) fill(fd int, n *node, rel string, depth int) {
	ents, err := list(fd)
	if err != nil {
		n.unlisted = true
		return
	}
	if isGitDir(namesOf(ents)) {
		n.place = gitTop
	}
	for _, e := range ents {
		r := join(rel, e.name)
		if w.skip[r] {
			continue
		}
		if !e.dir {
			if k := kindOf(n.place, e.name); k != inert {
				n.sens = append(n.sens, e.name)
				if k == config {
					w.include(fd, e.name, r)
				}
			}
			continue
		}
		kid := &node{name: e.name, place: placeOf(n.place, e.name)}
		n.kids = append(n.kids, kid)
		w.descend(fd, kid, r, depth+1)
	}
}

func (w *walker) descend(pfd int, kid *node, rel string, depth int) {
	fd, err := openDir(pfd, kid.name)
	if err != nil {
		if st, err := statAt(pfd, kid.name); err == nil {
			kid.dev, kid.ino = uint64(st.Dev), st.Ino
		}
		kid.opaque = true
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		kid.dev, kid.ino = uint64(st.Dev), st.Ino
	}
	if depth > maxDepth || w.dirs >= maxDirs {
		kid.unlisted = true
		return
	}
	w.dirs++
	w.fill(fd, kid, rel, depth)
}

// include notes the workspace's files that the config name (at rel)
// includes: the config is hers, what it includes the task may change.
func (w *walker) include(fd int, name, rel string) {
	data, err := readAt(fd, name, maxFile)
	if err != nil {
		return
	}
	all, err := parseConfig(data)
	if err != nil {
		return
	}
	for _, s := range all {
		section, _, key := s.parts()
		if key != "path" || section != "include" && section != "includeif" || !s.hasValue {
			continue
		}
		p := s.value
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = filepath.Join(os.Getenv("HOME"), rest)
		} else if !filepath.IsAbs(p) {
			p = filepath.Join(w.root, filepath.Dir(rel), p)
		}
		if within(w.root, filepath.Clean(p)) {
			w.includes = append(w.includes, include{path: filepath.Clean(p), by: rel})
		}
	}
}

func namesOf(ents []dirent) map[string]bool {
	m := make(map[string]bool, len(ents))
	for _, e := range ents {
		m[e.name] = true
	}
	return m
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// within says whether p is root or beneath it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
