package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// layered are the packages whose files must read top to bottom: no file
// uses a name of another file that uses one of its own, directly or
// round a loop. The daemon's API is one package of many files; a loop
// among them is a file pointing back up, which a move removes.
var layered = []string{"../daemon/api"}

// TestFilesLayered: each layered package's file graph (which file uses a
// package-level name, method or field declared in which) has no cycle.
func TestFilesLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks, with the export data go list builds")
	}
	for _, dir := range layered {
		edges, err := fileGraph(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, c := range cycles(edges) {
			t.Errorf("%s: these files reach each other (a file points back up; move what they share below them): %s",
				dir, strings.Join(c, " "))
		}
	}
}

// fileGraph type-checks dir's non-test files and returns, per file, the
// files whose declarations it uses.
func fileGraph(dir string) (map[string]map[string]bool, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	lookup, err := exportData(dir)
	if err != nil {
		return nil, err
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	pkg, err := conf.Check(dir, fset, files, info)
	if err != nil {
		return nil, err
	}
	edges := map[string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAtTop(obj, pkg) {
			continue
		}
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			if edges[from] == nil {
				edges[from] = map[string]bool{}
			}
			edges[from][to] = true
		}
	}
	return edges, nil
}

// exportData: where the compiler's export data of each package dir
// depends on is, for the "gc" importer. Type-checking the imports from
// source instead took this test 100 s under -race (all of net/http and
// D-Bus, instrumented); go list -export reads the build cache, which
// go vet has filled.
func exportData(dir string) (func(string) (io.ReadCloser, error), error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v: %s", err, stderr.Bytes())
	}
	files := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			files[path] = file
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("go list -export gave no export data for %s", path)
		}
		return os.Open(file)
	}, nil
}

// declaredAtTop: a package-level name, or a method or field of one.
func declaredAtTop(obj types.Object, pkg *types.Package) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	if _, ok := obj.(*types.Func); ok {
		return true
	}
	v, ok := obj.(*types.Var)
	return ok && v.IsField()
}

// cycles are the graph's strongly connected groups of more than one file
// (Tarjan's algorithm), each sorted.
func cycles(edges map[string]map[string]bool) [][]string {
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack, on[v] = append(stack, v), true
		for w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var c []string
		for w := ""; w != v; {
			w, stack = stack[len(stack)-1], stack[:len(stack)-1]
			on[w] = false
			c = append(c, w)
		}
		if len(c) > 1 {
			sort.Strings(c)
			out = append(out, c)
		}
	}
	var names []string
	for n := range edges {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return out
}
