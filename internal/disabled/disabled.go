// Package disabled keeps the record of what agor's post-run guard
// (internal/executor/gitguard) disabled in a person's workspaces, and
// puts it back when she asks (agorctl disabled restore).
//
// The record is a file of hers, $HOME/.local/state/agor/disabled.jsonl,
// one JSON object a line, written by her executor (which runs as her)
// and read by agorctl run by her. A confined task cannot write it: its
// view, or Landlock, leaves it only the workspace, its agent's state
// (~/.local/state/agor/confined) and its temp directory.
package disabled

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Record is one thing the guard disabled.
type Record struct {
	Time     time.Time `json:"time"`
	Path     string    `json:"path"`     // where it was, absolute
	Disabled string    `json:"disabled"` // where the guard moved it
	Why      string    `json:"why"`
	Dev      uint64    `json:"dev"`
	Ino      uint64    `json:"ino"` // of what it moved: restore refuses another
	// Mode is the mode it had when the guard also took every permission
	// from it (a directory it could not examine whole), else nil.
	Mode *uint32 `json:"mode,omitempty"`
	// Written is the inode of what the guard wrote at Path in its place
	// (a config of the inert keys only), which restore may replace.
	Written uint64 `json:"written,omitempty"`
}

// maxBytes bounds the record: past it, an append first drops the
// records of what is no longer there (restored, or removed by her). A
// record's why is cut at maxWhy; a line longer than maxLine is skipped.
const (
	maxBytes = 4 << 20
	maxWhy   = 4096
	maxLine  = 64 << 10
)

// Path is the record's file for a person whose home is home.
func Path(home string) string {
	return filepath.Join(home, ".local", "state", "agor", "disabled.jsonl")
}

// Append adds recs to the record at path.
func Append(path string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	return locked(path, func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
			kept, err := read(f)
			if err != nil {
				return err
			}
			if err := rewrite(f, live(kept)); err != nil {
				return err
			}
		}
		var b bytes.Buffer
		for _, r := range recs {
			if len(r.Why) > maxWhy {
				r.Why = r.Why[:maxWhy] + "..."
			}
			line, err := json.Marshal(r)
			if err != nil {
				return err
			}
			b.Write(append(line, '\n'))
		}
		_, err := f.Write(b.Bytes())
		return err
	})
}

// Load returns the records at path (none when there is no file).
func Load(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		return nil, err
	}
	return read(f)
}

// locked runs fn with path open for appending, under an exclusive lock
// (the executor's tasks append, agorctl rewrites).
func locked(path string, fn func(*os.File) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	return fn(f)
}

func read(f *os.File) ([]Record, error) {
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	var out []Record
	rd := bufio.NewReader(f)
	for {
		line, long, err := readLine(rd)
		if err != nil {
			return out, nil // io.EOF, or the end of what can be read
		}
		var r Record
		if !long && json.Unmarshal(line, &r) == nil && r.Path != "" && r.Disabled != "" {
			out = append(out, r)
		}
	}
}

// readLine reads one line, at most maxLine of it kept; long says it was
// longer.
func readLine(rd *bufio.Reader) (line []byte, long bool, err error) {
	for {
		part, more, err := rd.ReadLine()
		if err != nil {
			return nil, false, err
		}
		if len(line)+len(part) > maxLine {
			long = true
		} else {
			line = append(line, part...)
		}
		if !more {
			return line, long, nil
		}
	}
}

func rewrite(f *os.File, recs []Record) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	_, err := f.Write(b.Bytes()) // O_APPEND: at the (new) end
	return err
}

// live keeps the records whose disabled thing is still where it was put.
func live(recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		if same(r.Disabled, r.Dev, r.Ino) {
			out = append(out, r)
		}
	}
	return out
}

func same(path string, dev, ino uint64) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Ino == ino && uint64(st.Dev) == dev
}

// Outcome is what Restore did with one record.
type Outcome struct {
	Record
	Restored bool
	Gone     bool   // no longer there: dropped from the record
	Note     string // why not, or what else it did
}

// Restore puts back every recorded thing at or beneath one of under
// (absolute paths; none: all of them), last disabled first, and drops
// from the record what it put back and what is gone.
func Restore(path string, under []string) ([]Outcome, error) {
	var out []Outcome
	err := locked(path, func(f *os.File) error {
		recs, err := read(f)
		if err != nil {
			return err
		}
		var kept []Record
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if !beneath(r.Path, under) {
				kept = append(kept, r)
				continue
			}
			o := put(r)
			if !o.Restored && !o.Gone {
				kept = append(kept, r)
			}
			out = append(out, o)
		}
		for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
			kept[i], kept[j] = kept[j], kept[i]
		}
		return rewrite(f, kept)
	})
	return out, err
}

func beneath(p string, under []string) bool {
	if len(under) == 0 {
		return true
	}
	for _, u := range under {
		u = filepath.Clean(u)
		if p == u || strings.HasPrefix(p, strings.TrimSuffix(u, "/")+"/") {
			return true
		}
	}
	return false
}

// put moves one record's thing back where it was.
func put(r Record) Outcome {
	o := Outcome{Record: r}
	var st unix.Stat_t
	if err := unix.Lstat(r.Disabled, &st); err != nil {
		o.Gone, o.Note = true, "no longer there (put back or removed since)"
		return o
	}
	if st.Ino != r.Ino || uint64(st.Dev) != r.Dev {
		o.Note = "not what the guard disabled (replaced since): left as it is"
		return o
	}
	var at unix.Stat_t
	replace := false
	if err := unix.Lstat(r.Path, &at); err == nil {
		if r.Written == 0 || at.Ino != r.Written {
			o.Note = "something else is there now: move it away first"
			return o
		}
		replace = true // the guard's own config of the inert keys
	}
	if r.Mode != nil {
		if err := unix.Fchmodat(unix.AT_FDCWD, r.Disabled, *r.Mode, 0); err != nil {
			o.Note = fmt.Sprintf("mode not put back: %v", err)
			return o
		}
	}
	var err error
	if replace {
		err = unix.Rename(r.Disabled, r.Path)
		o.Note = "replacing the config of inert keys the guard wrote there"
	} else {
		err = unix.Renameat2(unix.AT_FDCWD, r.Disabled, unix.AT_FDCWD, r.Path, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		o.Note = fmt.Sprintf("not renamed back: %v", err)
		return o
	}
	o.Restored = true
	return o
}
