package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size budget, for every non-test .go file of the module: functions
// stay small (the median is a few lines), and a long file is split by
// concern.
const (
	maxFileLines = 500
	maxFuncLines = 60 // from func to the closing brace
)

// overBudget is what was over the budget when it was set, each with the
// reason it stays for now. Shrink one and take it off (the test says
// when an entry is no longer needed); add none without a reason.
// Keys: a file, or file:Func, file:Type.Method.
var overBudget = map[string]bool{}

// TestSizeBudget: no file over maxFileLines lines and no function over
// maxFuncLines, but those in overBudget.
func TestSizeBudget(t *testing.T) {
	over := sizes(t, "../..")
	for key, lines := range over {
		if !overBudget[key] {
			t.Errorf("%s: %d lines, over the budget (%d per file, %d per function): split it", key, lines, maxFileLines, maxFuncLines)
		}
	}
	for key := range overBudget {
		if _, ok := over[key]; !ok {
			t.Errorf("%s is within the budget now (or gone): take it off overBudget", key)
		}
	}
}

// sizes walks the module at root and returns what is over the budget,
// keyed as overBudget is, with its length in lines.
func sizes(t *testing.T, root string) map[string]int {
	t.Helper()
	over := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		measure(fset, f, filepath.ToSlash(rel), over)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return over
}

// skipDir: not the module's code (hidden folders, testdata, npm's, and
// folders with a go.mod of their own, such as tools/).
func skipDir(path, name string) bool {
	if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

func measure(fset *token.FileSet, f *ast.File, rel string, over map[string]int) {
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		over[rel] = n
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
			over[rel+":"+funcName(fn)] = n
		}
	}
}

// funcName is Func, or Type.Method for a method (pointer or not).
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr: // a generic type's method
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	return fmt.Sprintf("%s.%s", typ, fn.Name.Name)
}

// TestBudgetBites: measure finds a long file and a long function, and
// names a method by its type (so TestSizeBudget passing means something).
func TestBudgetBites(t *testing.T) {
	src := "package p\n\ntype T[K any] struct{}\n\nfunc (*T[K]) Long() {\n" +
		strings.Repeat("\t_ = 1\n", maxFuncLines-1) + "}\n\nfunc Short() {\n}\n" +
		strings.Repeat("\n", maxFileLines)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]int{}
	measure(fset, f, "p.go", over)
	want := map[string]int{"p.go": fset.File(f.Pos()).LineCount(), "p.go:T.Long": maxFuncLines + 1}
	if fmt.Sprint(over) != fmt.Sprint(want) {
		t.Fatalf("measured %v, want %v", over, want)
	}
}
