// Command timetable prints where a CI run's time went: the phases that
// test/timing.sh recorded (START END NAME per line, names nested with
// " > "), as a tree sorted by seconds within each level, each beside its
// time in an earlier run's file, with the run's wall-clock total.
//
//	go run ./test/timetable test/.logs/times.tsv test/ci-times.tsv
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// sep joins a phase's name to its parent's: "make test-systemd > bookworm".
const sep = " > "

// times is a run's phases: seconds by name (a phase run twice counts
// both times), and the run's first start and last end.
type times struct {
	secs       map[string]float64
	first, end float64
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: timetable TIMES.tsv [EARLIER.tsv]")
		os.Exit(2)
	}
	now, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "timetable:", err)
		os.Exit(1)
	}
	var before *times
	if len(os.Args) == 3 {
		if before, err = load(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "timetable: the earlier run:", err)
			before = nil
		}
	}
	render(os.Stdout, now, before)
}

func load(path string) (*times, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

// parse reads START END NAME lines; a line that is not one is skipped
// (a run cut short may leave half a line).
func parse(r io.Reader) (*times, error) {
	t := &times{secs: map[string]float64{}, first: math.Inf(1), end: math.Inf(-1)}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 || f[2] == "" {
			continue
		}
		start, err1 := strconv.ParseFloat(f[0], 64)
		end, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || end < start {
			continue
		}
		t.secs[f[2]] += end - start
		if !strings.Contains(f[2], sep) {
			t.first = math.Min(t.first, start)
			t.end = math.Max(t.end, end)
		}
	}
	return t, sc.Err()
}

// render writes the tree: each level sorted by seconds, longest first.
func render(w io.Writer, now, before *times) {
	fmt.Fprintf(w, "%9s %9s  %s\n", "seconds", "earlier", "phase")
	children := map[string][]string{}
	for name := range now.secs {
		parent := ""
		if i := strings.LastIndex(name, sep); i >= 0 {
			parent = name[:i]
		}
		children[parent] = append(children[parent], name)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		names := children[parent]
		sort.Slice(names, func(i, j int) bool {
			if now.secs[names[i]] != now.secs[names[j]] {
				return now.secs[names[i]] > now.secs[names[j]]
			}
			return names[i] < names[j]
		})
		for _, n := range names {
			fmt.Fprintf(w, "%9.1f %9s  %s%s\n", now.secs[n], earlier(before, n), strings.Repeat("  ", depth), strings.TrimPrefix(n, parent+sep))
			walk(n, depth+1)
		}
	}
	walk("", 0)
	if now.end > now.first {
		total := "-"
		if before != nil && before.end > before.first {
			total = fmt.Sprintf("%.1f", before.end-before.first)
		}
		fmt.Fprintf(w, "%9.1f %9s  total (wall clock; phases under one name may overlap)\n", now.end-now.first, total)
	}
}

func earlier(before *times, name string) string {
	if before == nil {
		return "-"
	}
	s, ok := before.secs[name]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", s)
}
