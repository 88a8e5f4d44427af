package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ledgerWriters are the only packages whose code may call the store's
// AddSpend: the ledger is the daemon's record of what the providers'
// answers said, written by the gateway's meter, never from anything an
// executor reports (its person controls it).
var ledgerWriters = []string{"internal/daemon/meter", "internal/daemon/store"}

// TestLedgerWrittenByMeterOnly: no other package's code calls AddSpend.
func TestLedgerWrittenByMeterOnly(t *testing.T) {
	calls := callersOf(t, "../..", "AddSpend")
	if len(calls) == 0 {
		t.Fatal("nothing calls AddSpend: the check would pass on anything")
	}
	for _, c := range calls {
		allowed := false
		for _, w := range ledgerWriters {
			allowed = allowed || strings.HasPrefix(c, w+"/")
		}
		if !allowed {
			t.Errorf("%s writes the ledger; only %v may (the ledger is the gateway's record)", c, ledgerWriters)
		}
	}
}

// callersOf lists "dir/file.go:line" of each non-test call of a method
// or function named name under root.
func callersOf(t *testing.T, root, name string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == name {
					rel, _ := filepath.Rel(root, path)
					out = append(out, filepath.ToSlash(rel)+":"+strconv.Itoa(fset.Position(call.Pos()).Line))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
