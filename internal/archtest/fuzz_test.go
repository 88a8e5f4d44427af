package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fuzzPackages lists, by parsing every test file under root, the
// packages ("./internal/x") that hold a fuzz target: a function named
// FuzzXxx taking *testing.F.
func fuzzPackages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") && takesF(fn) {
				rel, _ := filepath.Rel(root, filepath.Dir(path))
				seen["./"+filepath.ToSlash(rel)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func takesF(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F"
}

// TestFuzzListed: make fuzz (part of make test) runs every package that
// holds a fuzz target; before, a target in a package the Makefile did not
// name (rawframe's) never ran.
func TestFuzzListed(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-s", "-C", "../..", "fuzz-packages").Output()
	if err != nil {
		t.Fatalf("make fuzz-packages: %v", err)
	}
	listed := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		listed[p] = true
	}
	want := fuzzPackages(t, "../..")
	if len(want) == 0 {
		t.Fatal("found no fuzz target in the tree")
	}
	for _, p := range want {
		if !listed[p] {
			t.Errorf("make fuzz leaves out %s, which holds a fuzz target", p)
		}
	}
	for p := range listed {
		if !contains(want, p) {
			t.Errorf("make fuzz names %s, which holds no fuzz target", p)
		}
	}
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}
