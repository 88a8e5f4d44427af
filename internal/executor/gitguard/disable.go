package gitguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agor-sh/agor/internal/disabled"
)

// Disabled is the suffix a neutralised file or directory gets.
const Disabled = ".agor-disabled"

// disable renames name in pfd to name.agor-disabled (or .N, never over
// anything), records it for agorctl disabled restore and reports it as
// "REL: why (disabled: renamed NEW...)". written names the file the
// caller writes in its place ("" for none). It returns the new name, ""
// when it could not rename.
func (s *sweep) disable(pfd int, name, rel, why, written string) string {
	st, err := statAt(pfd, name)
	if err != nil {
		s.found = append(s.found, fmt.Sprintf("%s: %s (gone before it could be disabled: %v)", rel, why, err))
		return ""
	}
	to, err := renameAway(pfd, name)
	if err != nil {
		s.found = append(s.found, fmt.Sprintf("%s: %s (could not disable it: %v)", rel, why, err))
		return ""
	}
	dir := filepath.Join(s.root, filepath.Dir(rel))
	s.recs = append(s.recs, disabled.Record{Time: time.Now(), Path: filepath.Join(s.root, rel),
		Disabled: filepath.Join(dir, to), Why: why, Dev: uint64(st.Dev), Ino: st.Ino})
	msg := fmt.Sprintf("%s: %s (disabled: renamed %s", rel, why, to)
	if written != "" {
		msg += "; a config of its inert keys written in its place"
	}
	s.found = append(s.found, msg+")")
	return to
}

// renameAway renames name to a free NAME.agor-disabled[.N]. A directory
// that refuses (the task took its write permission) is given it back.
func renameAway(pfd int, name string) (string, error) {
	try := func() (string, error) {
		to := name + Disabled
		for i := 1; ; i++ {
			err := renameAt(pfd, name, to)
			if !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOTEMPTY) || i == 100 {
				return to, err
			}
			to = fmt.Sprintf("%s%s.%d", name, Disabled, i)
		}
	}
	to, err := try()
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && unix.Fchmod(pfd, st.Mode&0o7777|0o700) == nil {
			to, err = try()
		}
	}
	return to, err
}

// cut disables what the sweep could not examine whole: beyond a bound,
// unreadable, too deep. A directory also loses every permission (until
// it is restored), so that nothing in it can be reached: a repository in
// it would still be one under any name.
func (s *sweep) cut(pfd int, name, rel string, st *unix.Stat_t, why string) {
	why = "not examined (" + why + "), so taken for dangerous"
	if !isDir(st) {
		s.disable(pfd, name, rel, why, "")
		return
	}
	to := s.disable(pfd, name, rel, why+"; its permissions taken away until restored", "")
	if to == "" {
		return
	}
	fd, err := openAt(pfd, to, dirFlags, 0)
	if err == nil {
		err = unix.Fchmod(fd, 0)
		unix.Close(fd)
	} else { // it gave itself no read permission: chmod by name
		err = unix.Fchmodat(pfd, to, 0, 0)
	}
	if err != nil {
		s.found = append(s.found, fmt.Sprintf("%s: its permissions could not be taken away (%v)", rel, err))
		return
	}
	mode := st.Mode & 0o7777
	s.recs[len(s.recs)-1].Mode = &mode
}

// includes disables the files a config of hers includes, where they
// changed since.
func (s *sweep) includes() {
	for _, inc := range s.w.includes {
		rel, err := filepath.Rel(s.root, inc.path)
		if err != nil {
			continue
		}
		pfd, err := openParent(s.root, rel)
		if err != nil {
			continue
		}
		st, err := statAt(pfd, filepath.Base(rel))
		if err == nil && changedSince(&st, s.since) {
			s.disable(pfd, filepath.Base(rel), rel, "configuration "+inc.by+" includes, changed", "")
		}
		unix.Close(pfd)
	}
}

// openParent opens the directory holding rel beneath root, a component
// at a time and following no link.
func openParent(root, rel string) (int, error) {
	fd, err := unix.Open(root, dirFlags, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(filepath.Dir(rel), "/") {
		if c == "." || c == "" {
			continue
		}
		next, err := openDir(fd, c)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// head is the start of a file, for a report.
func head(pfd int, name string) string {
	fd, err := openAt(pfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 160))
	return strings.Join(strings.Fields(string(b)), " ")
}

// maxReport bounds what a sweep says: every one is in the record.
const maxReport = 100

// report is what the sweep found, bounded.
func (s *sweep) report() []string {
	if len(s.found) <= maxReport {
		return s.found
	}
	more := len(s.found) - maxReport
	return append(s.found[:maxReport:maxReport],
		fmt.Sprintf("...: and %d more disabled, each in the record (agorctl disabled list)", more))
}
