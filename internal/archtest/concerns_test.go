package archtest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// concernsFile is the real-systemd suite's list: each concern, in the
// order checks.sh runs them, with the releases it runs on.
const concernsFile = "test/systemd/concerns.txt"

// validPart: which of Debian 12's two containers runs a concern.
var validPart = map[string]bool{"1": true, "2": true, "1,2": true}

// readConcerns parses concernsFile: "NAME RELEASE,RELEASE PART" lines.
func readConcerns(t *testing.T, root string) (order []string, releases map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, concernsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	releases = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 || !validPart[fields[2]] {
			t.Fatalf("%s: %q is not NAME RELEASES PART (PART 1, 2 or 1,2)", concernsFile, line)
		}
		order = append(order, fields[0])
		releases[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return order, releases
}

// harnessFiles are test/systemd's scripts that are not concerns.
var harnessFiles = map[string]bool{"run": true, "checks": true, "lib": true, "scenes": true}

// docRow is a row of docs/testing.md's table of concerns:
// | `name` | releases | why |
var docRow = regexp.MustCompile("^\\| `([a-z]+)` \\| ([a-z, ]+) \\|")

// TestSuiteConcerns keeps the suite's list of concerns, their files and
// docs/testing.md's table (which says why each runs where it does) the
// same: every concern has a file, every concern file is listed, and the
// table names each with the releases the suite gives it.
func TestSuiteConcerns(t *testing.T) {
	root := "../.."
	order, releases := readConcerns(t, root)
	for _, c := range order {
		if _, err := os.Stat(filepath.Join(root, "test/systemd", c+".sh")); err != nil {
			t.Errorf("%s names %s, which has no file: %v", concernsFile, c, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, "test/systemd/*.sh"))
	for _, f := range files {
		c := strings.TrimSuffix(filepath.Base(f), ".sh")
		if _, ok := releases[c]; !ok && !harnessFiles[c] {
			t.Errorf("test/systemd/%s.sh is neither a concern in %s nor the harness's", c, concernsFile)
		}
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := docRow.FindStringSubmatch(line); m != nil {
			documented[m[1]] = strings.ReplaceAll(strings.ReplaceAll(m[2], " ", ""), "both", "bookworm,trixie")
		}
	}
	for _, c := range order {
		got, ok := documented[c]
		switch {
		case !ok:
			t.Errorf("docs/testing.md's table of concerns has no row for %s", c)
		case got != releases[c]:
			t.Errorf("docs/testing.md says %s runs on %s; %s says %s", c, got, concernsFile, releases[c])
		}
	}
	for c := range documented {
		if _, ok := releases[c]; !ok {
			t.Errorf("docs/testing.md's table names %s, which %s does not", c, concernsFile)
		}
	}
	if len(order) == 0 {
		t.Fatalf("%s lists no concern", concernsFile)
	}
}
