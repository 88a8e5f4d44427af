package gitguard

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// judge examines one entry that is new or changed, whole (a directory
// with all it holds, whatever their times), disables what it cannot show
// to be inert, and cuts it (cut) if a bound stops it before it is done.
// A directory is returned as the tree's new node.
func (s *sweep) judge(pfd int, name, rel string, pp place, st *unix.Stat_t, depth int) *node {
	n, stopped := s.examine(pfd, name, rel, pp, st, depth)
	if stopped {
		s.cut(pfd, name, rel, st, s.bound)
		return nil
	}
	return n
}

// examine is judge without the cut: stopped says a bound was reached
// before it was done, and the caller cuts the outermost unfinished entry.
func (s *sweep) examine(pfd int, name, rel string, pp place, st *unix.Stat_t, depth int) (*node, bool) {
	if s.skip[rel] {
		return nil, false
	}
	if !s.tick() {
		return nil, true
	}
	if isDir(st) {
		return s.judgeDir(pfd, name, rel, pp, st, depth+1)
	}
	s.judgeFile(pfd, name, rel, pp)
	return nil, false
}

// judgeDir examines a new or changed directory whole. One git would take
// for a git directory is judged as one, whatever its name; one that is
// settings by its name is disabled as a whole.
func (s *sweep) judgeDir(pfd int, name, rel string, pp place, st *unix.Stat_t, depth int) (*node, bool) {
	if depth > maxDepth {
		s.cut(pfd, name, rel, st, fmt.Sprintf("deeper than %d directories", maxDepth))
		return nil, false
	}
	fd, err := openDir(pfd, name)
	if err != nil {
		s.cut(pfd, name, rel, st, fmt.Sprintf("it cannot be opened (%v)", err))
		return nil, false
	}
	defer unix.Close(fd)
	ents, err := list(fd)
	if err != nil {
		s.cut(pfd, name, rel, st, fmt.Sprintf("it cannot be listed (%v)", err))
		return nil, false
	}
	n := &node{name: name, dev: uint64(st.Dev), ino: st.Ino, place: placeOf(pp, name)}
	asSettings := n.place == settings
	if isGitDir(namesOf(ents)) {
		n.place = gitTop
	}
	if asSettings && n.place != gitTop {
		return s.disableDir(pfd, n, rel, settingsWhy(pp, name)), false
	}
	for _, e := range ents {
		r := join(rel, e.name)
		est, err := statAt(fd, e.name)
		if s.skip[r] || err != nil {
			continue
		}
		if !isDir(&est) && kindOf(n.place, e.name) != inert {
			n.sens = append(n.sens, e.name)
		}
		kid, stopped := s.examine(fd, e.name, r, n.place, &est, depth)
		if stopped {
			return nil, true
		}
		n.kids = s.appendNode(n.kids, kid)
	}
	if asSettings {
		return s.disableDir(pfd, n, rel, settingsWhy(pp, name)), false
	}
	return n, false
}

// disableDir disables a directory whole; the tree keeps it under its new
// name, to be looked at in full next time.
func (s *sweep) disableDir(pfd int, n *node, rel, why string) *node {
	to := s.disable(pfd, n.name, rel, why, "")
	if to == "" {
		return nil
	}
	return &node{name: to, dev: n.dev, ino: n.ino, place: inertPlace, unlisted: true}
}

func settingsWhy(pp place, name string) string {
	switch pp {
	case gitTop:
		return "a directory git does not make in a git directory, which the guard cannot tell runs nothing"
	case gitHooks:
		return "in a git directory's hooks"
	case gitState:
		return "in the state of a git operation in progress, which the guard cannot tell runs nothing"
	}
	return "project settings a program reads and may run commands from"
}

// judgeFile examines a new or changed file (or link, or other) by kind.
func (s *sweep) judgeFile(pfd int, name, rel string, pp place) {
	switch k := kindOf(pp, name); k {
	case inert:
	case suspect:
		s.disable(pfd, name, rel, suspectWhy(pfd, name, pp), "")
	case config:
		s.config(pfd, name, rel, inertKeys, name == "config")
	case gitmodules:
		s.config(pfd, name, rel, inertModules, false)
	case seqOpts:
		s.config(pfd, name, rel, inertOpts, false)
	default:
		if why := s.pointsOut(pfd, name, rel, k); why != "" {
			s.disable(pfd, name, rel, why, "")
		}
	}
}

func suspectWhy(pfd int, name string, pp place) string {
	switch pp {
	case gitHooks:
		return "a git hook: " + head(pfd, name)
	case gitTop:
		return "git state that is neither data nor a config the guard can read (it may name a command)"
	case gitObjInfo:
		return "objects git would fetch over HTTP from elsewhere"
	case gitRemotes:
		return "a remote named the old way, whose URL the guard does not judge"
	case gitState:
		return "in the state of a git operation in progress, which the guard cannot tell runs nothing"
	}
	return "project settings a program reads and may run commands from"
}

// config judges a config (or .gitmodules, or sequencer/opts): it stays
// if it parses fully and allow keeps every key; otherwise it is
// disabled, and a repository's config gets one of its kept keys in its
// place, so that git still works.
func (s *sweep) config(pfd int, name, rel string, allow map[string]bool, rewrite bool) {
	data, err := readAt(pfd, name, maxFile)
	var kept []setting
	var dropped []string
	if err == nil {
		kept, dropped, err = keep(data, allow)
	}
	if err == nil && len(dropped) == 0 {
		return
	}
	why := "keys that are not inert: " + clip(dropped)
	if err != nil {
		why = fmt.Sprintf("it cannot be read whole and parsed (%v), so nothing tells it runs nothing", err)
	}
	if !rewrite {
		s.disable(pfd, name, rel, why, "")
		return
	}
	if s.disable(pfd, name, rel, why, name) == "" {
		return
	}
	if err != nil {
		kept = nil
	}
	data, ok := renderConfig(kept)
	if !ok {
		data = nil
	}
	ino, werr := writeNewAt(pfd, name, data, 0o644)
	if werr != nil {
		s.found = append(s.found, fmt.Sprintf("%s: no config of its inert keys written in its place (%v)", rel, werr))
		return
	}
	if len(s.recs) > 0 {
		s.recs[len(s.recs)-1].Written = ino
	}
}

// clip lists settings for a report, a few and short.
func clip(list []string) string {
	var out []string
	for i, d := range list {
		if i == 4 {
			out = append(out, fmt.Sprintf("and %d more", len(list)-i))
			break
		}
		if len(d) > 120 {
			d = d[:120] + "..."
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}

// todoCommands are the rebase and sequencer commands that run nothing
// (exec runs a shell command; anything else is not known to be inert).
var todoCommands = set("pick", "p", "reword", "r", "edit", "e", "squash", "s", "fixup", "f", "drop", "d",
	"label", "l", "reset", "t", "merge", "m", "break", "b", "update-ref", "u", "noop", "revert")

// pointsOut judges a pointer, a command list or a strategy, and says why
// it is not inert ("" when it is).
func (s *sweep) pointsOut(pfd int, name, rel string, k kind) string {
	limit := 4096
	if k == todo || k == alternates {
		limit = maxFile
	}
	data, err := readAt(pfd, name, limit)
	if err != nil {
		return fmt.Sprintf("it cannot be read whole (%v), so nothing tells where it points or what it runs", err)
	}
	text := strings.TrimRight(string(data), "\r\n")
	switch k {
	case gitfile:
		target, ok := strings.CutPrefix(text, "gitdir: ")
		if !ok {
			return "a .git file that is not a gitdir: line"
		}
		return s.outside(filepath.Dir(rel), target, "a .git file")
	case commondir:
		return s.outside(filepath.Dir(rel), text, "a common directory")
	case alternates:
		for _, line := range strings.Split(text, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if why := s.outside(filepath.Dir(filepath.Dir(rel)), line, "alternate objects"); why != "" {
				return why
			}
		}
	case todo:
		for _, line := range strings.Split(text, "\n") {
			word, _, _ := strings.Cut(strings.TrimLeft(line, " \t"), " ")
			if word != "" && !strings.HasPrefix(word, "#") && !todoCommands[word] {
				return "a command git would run to continue the operation: " + clip([]string{line})
			}
		}
	case strategy:
		if !builtinStrategies[text] {
			return fmt.Sprintf("the merge strategy %q, which runs git-merge-%s", text, text)
		}
	case objectID:
		if !objectName(text) {
			return "opencode's project id that is not an object name: opencode makes paths of it"
		}
	}
	return ""
}

// objectName says whether s is a full object name, SHA-1 or SHA-256, in
// lower-case hex as git prints it: a name no program can take for a path
// or a command.
func objectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// outside says why target (relative to the directory dir of the
// workspace, or absolute) is not a path in the workspace: git would read
// what it names, which the guard cannot judge; "" when it is inside.
func (s *sweep) outside(dir, target, what string) string {
	if strings.HasPrefix(target, "\"") {
		return what + " in quotes, which the guard does not read"
	}
	p := target
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.root, dir, p)
	}
	real, err := filepath.EvalSymlinks(p)
	switch {
	case errors.Is(err, unix.ENOENT) && within(s.root, filepath.Clean(p)) && !strings.Contains(target, ".."):
		return "" // nothing there yet: what the task makes there later is judged then
	case err != nil:
		return fmt.Sprintf("%s pointing at %s, which the guard cannot follow (%v)", what, target, err)
	case !within(s.real, real):
		return fmt.Sprintf("%s pointing at %s, outside the workspace: git would use what is there", what, target)
	}
	return ""
}
