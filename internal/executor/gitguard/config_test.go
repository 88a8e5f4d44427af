package gitguard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// configSeeds are configs written every way git's syntax allows, and a
// few it refuses: the parser must read each as git does.
var configSeeds = []string{
	"[core]\n\tbare = false\n",
	"[core] fsmonitor = touch x\n",
	"[core]fsmonitor=x",
	"[core] # a comment\n\tfsmonitor = x\n",
	"[core] ; a comment\n\tfsmonitor = x\n",
	"[core]\n\tx = a \\\n[alias]\n\tfsmonitor = y\n",
	"[CoRe]\n\tFsMonitor = X\n",
	"[core]\n\tfsmonitor\n",
	"[remote \"Origin\"]\n\turl = a\n",
	"[remote \"a\\\"b\\\\c\\d\"]\n\turl = a\n",
	"[remote.Origin]\n\turl = a\n",
	"[a.B.c]\n\tk = 1\n",
	"[ \"x\"]\n\tk = 1\n",
	"[a \"\"]\n\tk = 1\n",
	"k = 1\n[a]\n",
	"[a]\n\tb = x \t  y\n",
	"[a]\n\tb = x  y \t\n\tc\n\td = \"q ; #\"  # c\n\te = a\\\n  b\n",
	"[a]\n\tb = \"x\\ty\\nz\\b\\\\\\\"\"\n",
	"[a]\n\tb = \"unclosed\n",
	"[a]\n\tb = \\q\n",
	"[a]\n\tb # c\n",
	"[a]\n\tb = 1 \\",
	"[a]\n\t1b = 1\n",
	"[a b]\n",
	"[a \"b\" ]\n",
	"[a \"b\nc\"]\n",
	"[]\n",
	"[a\n",
	"[a]\r\n\tb = 1\r\n\tc = 2\r\r\n",
	"\xef\xbb\xbf[a]\n\tb = 1\n",
	"\xef\xbb[a]\n",
	"[a]\n\tb = x\x00y\n",
	"[a]\n\tb = \"a\"b\" c\"  \n",
	"[a]\n\tb-c = 1\n\tb_c = 2\n",
	"  \n\t# only comments\n; and this\n",
	"[a]\n\tb = 1 [c]\n",
	"[include]\n\tpath = x\n[includeIf \"gitdir:/a/\"]\n\tpath = y\n",
}

// gitList is what git reads from a config file, as git config --list
// gives it ("name" or "name\nvalue"); ok false when git refuses it.
func gitList(t *testing.T, data string) ([]string, bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", path, "--list", "-z")
	cmd.Env = gitEnv(t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	list := strings.Split(string(out), "\x00")
	return list[:len(list)-1], true
}

func listOf(settings []setting) []string {
	out := []string{}
	for _, s := range settings {
		if s.hasValue {
			out = append(out, s.name+"\n"+s.value)
		} else {
			out = append(out, s.name)
		}
	}
	return out
}

// TestConfigAsGitReadsIt: each seed parses to what git reads, or is
// refused where git refuses it (and where git would cut at a NUL); what
// is rendered back, git reads as the same settings.
func TestConfigAsGitReadsIt(t *testing.T) {
	needGit(t)
	for _, seed := range configSeeds {
		got, err := parseConfig([]byte(seed))
		want, ok := gitList(t, seed)
		if errors.Is(err, errVersions) {
			continue // refused: git's releases differ
		}
		if strings.Contains(seed, "\x00") {
			if err == nil {
				t.Errorf("%q: a NUL byte parsed (git reads %q)", seed, want)
			}
			continue
		}
		if (err == nil) != ok {
			t.Errorf("%q: parsed %v (%v), git read it: %v %q", seed, err == nil, err, ok, want)
			continue
		}
		if !ok {
			continue
		}
		if diff := cmp.Diff(want, listOf(got)); diff != "" {
			t.Errorf("%q: (-git +parsed)\n%s", seed, diff)
		}
		data, renderable := renderConfig(got)
		if !renderable {
			continue
		}
		back, ok := gitList(t, string(data))
		if diff := cmp.Diff(listOf(got), back); !ok || diff != "" {
			t.Errorf("%q rendered as %q: git reads (-parsed +git)\n%s", seed, data, diff)
		}
	}
}

// FuzzConfig: the parser takes any bytes without failing, and what it
// parses it renders to a config that parses to the same settings.
func FuzzConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseConfig(data)
		if err != nil {
			return
		}
		out, ok := renderConfig(got)
		if !ok {
			return
		}
		back, err := parseConfig(out)
		if err != nil {
			t.Fatalf("%q rendered as %q, which does not parse: %v", data, out, err)
		}
		if diff := cmp.Diff(listOf(got), listOf(back)); diff != "" {
			t.Fatalf("%q rendered as %q: (-parsed +again)\n%s", data, out, diff)
		}
	})
}
