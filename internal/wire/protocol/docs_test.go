package protocol_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agor-sh/agor/internal/wire/protocol"
	"github.com/agor-sh/agor/internal/wire/rpc"
)

// docPath is the protocol's documentation, from this package's directory.
const docPath = "../../../docs/protocol.md"

// The sections of docPath that hold the catalog, by their headings. In
// docMethods, a backticked name in a heading, or in the first column of a
// table whose first column is "Method", names a method or notification;
// in docEvents, the first column of the "Event type" table names an
// event; in docErrors, the first column of the "Code" table is a code.
const (
	docMethods = "## Methods and notifications"
	docEvents  = "## Event vocabulary"
	docErrors  = "## Error codes"
)

// errorCodes is every error code of the wire by its Go name: the
// connection's own (package rpc) and the application's. TestDocsComplete
// checks that it lists every Code constant both packages declare.
var errorCodes = map[string]int{
	"CodeParseError":          rpc.CodeParseError,
	"CodeInvalidRequest":      rpc.CodeInvalidRequest,
	"CodeMethodNotFound":      rpc.CodeMethodNotFound,
	"CodeInvalidParams":       rpc.CodeInvalidParams,
	"CodeInternalError":       rpc.CodeInternalError,
	"CodeRequestCancelled":    rpc.CodeRequestCancelled,
	"CodeLimitReached":        protocol.CodeLimitReached, // = rpc.CodeLimitReached
	"CodeTokenInvalid":        protocol.CodeTokenInvalid,
	"CodePermissionDenied":    protocol.CodePermissionDenied,
	"CodeTaskNotFound":        protocol.CodeTaskNotFound,
	"CodeExecutorUnavailable": protocol.CodeExecutorUnavailable,
	"CodeNotFound":            protocol.CodeNotFound,
	"CodeStorageFull":         protocol.CodeStorageFull,
}

// methodNames is every method and notification of the catalog: the lists
// methods.go keeps, and every message of catalog_test.go's catalog.
func methodNames() []string {
	names := slices.Concat(protocol.ExecutorMethods, protocol.DaemonMethods, protocol.StreamNotifications)
	for _, m := range catalog {
		names = append(names, m.method)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestDocsComplete: every method, notification, event type, error code
// and reason of the catalog is in docs/protocol.md, each method under a
// heading of its own and in the summary table.
func TestDocsComplete(t *testing.T) {
	d := readDoc(t)
	methods := d.section(t, docMethods)
	headed, listed := methods.headingNames(), methods.firstColumn("Method")
	for _, m := range methodNames() {
		if !slices.Contains(headed, m) {
			t.Errorf("method %s: no heading `%s` under %q of %s", m, m, docMethods, docPath)
		}
		if !slices.Contains(listed, m) {
			t.Errorf("method %s: no row in the Method table under %q of %s", m, docMethods, docPath)
		}
	}
	events := d.section(t, docEvents).firstColumn("Event type")
	for _, e := range protocol.EventTypes {
		if !slices.Contains(events, e) {
			t.Errorf("event type %s: no row in the Event type table under %q of %s", e, docEvents, docPath)
		}
	}
	codes := d.section(t, docErrors).rows("Code")
	for name, code := range errorCodes {
		row := codes[strconv.Itoa(code)]
		if !slices.Contains(backticked(row), name) {
			t.Errorf("error code %d: no row `%d` naming `%s` in the Code table under %q of %s", code, code, name, docErrors, docPath)
		}
	}
	for _, r := range constStrings(t, ".", "Reason") {
		if !d.mentions(r) {
			t.Errorf("reason %s: not in %s as `%s`", r, docPath, r)
		}
	}
}

// TestDocsCurrent: what the doc's catalog sections name as a method, an
// event type or an error code is one the catalog has, so that the doc
// cannot go on listing something removed.
func TestDocsCurrent(t *testing.T) {
	d := readDoc(t)
	methods := d.section(t, docMethods)
	known := methodNames()
	for _, m := range slices.Concat(methods.headingNames(), methods.firstColumn("Method")) {
		if !slices.Contains(known, m) {
			t.Errorf("%s names method `%s` under %q, which is not in the catalog", docPath, m, docMethods)
		}
	}
	for _, e := range d.section(t, docEvents).firstColumn("Event type") {
		if !protocol.KnownEventType(e) {
			t.Errorf("%s names event type `%s` under %q, which is not in the vocabulary", docPath, e, docEvents)
		}
	}
	codes := map[string]bool{}
	for _, c := range errorCodes {
		codes[strconv.Itoa(c)] = true
	}
	for code := range d.section(t, docErrors).rows("Code") {
		if !codes[code] {
			t.Errorf("%s lists error code `%s` under %q, which no package declares", docPath, code, docErrors)
		}
	}
}

// TestDocsConstants keeps the lists the doc tests rely on complete: every
// Method constant is in one of methods.go's lists, every Event constant in
// EventTypes, and every Code constant of protocol and rpc in errorCodes.
func TestDocsConstants(t *testing.T) {
	known := methodNames()
	for _, m := range constStrings(t, ".", "Method") {
		if !slices.Contains(known, m) {
			t.Errorf("method %s is in no list of methods.go (ExecutorMethods, DaemonMethods, StreamNotifications)", m)
		}
	}
	for _, e := range constStrings(t, ".", "Event") {
		if !protocol.KnownEventType(e) {
			t.Errorf("event type %s is not in EventTypes", e)
		}
	}
	for _, dir := range []string{".", "../rpc"} {
		for _, name := range constNames(t, dir, "Code") {
			if _, ok := errorCodes[name]; !ok {
				t.Errorf("%s (in %s) is not in errorCodes of docs_test.go", name, dir)
			}
		}
	}
}

// doc is docs/protocol.md.
type doc struct{ text string }

func readDoc(t *testing.T) doc {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("the protocol's documentation: %v", err)
	}
	return doc{string(b)}
}

// mentions reports whether the doc has name in backticks.
func (d doc) mentions(name string) bool { return strings.Contains(d.text, "`"+name+"`") }

// section is the text under heading (a level-2 heading, "## ..."), up to
// the next level-2 heading, without its fenced code blocks.
type section []string

func (d doc) section(t *testing.T, heading string) section {
	t.Helper()
	var s section
	in, fenced, found := false, false, false
	for _, line := range strings.Split(d.text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == heading
			found = found || in
			continue
		}
		if in {
			s = append(s, line)
		}
	}
	if !found {
		t.Fatalf("%s has no section %q", docPath, heading)
	}
	return s
}

// headingNames are the backticked names in the section's headings.
func (s section) headingNames() []string {
	var names []string
	for _, line := range s {
		if strings.HasPrefix(line, "#") {
			names = append(names, backticked(line)...)
		}
	}
	return names
}

// rows are the rows of the section's tables whose header's first cell is
// first, by their first cell (its backticked name), each the whole row.
func (s section) rows(first string) map[string]string {
	rows := map[string]string{}
	var header string // of the table the line is in; "" outside tables
	for _, line := range s {
		if !strings.HasPrefix(line, "|") {
			header = ""
			continue
		}
		if header == "" {
			header = strings.TrimSpace(cells(line)[0])
			continue
		}
		if header != first || isRule(line) {
			continue
		}
		for _, name := range backticked(cells(line)[0]) {
			rows[name] = line
		}
	}
	return rows
}

// firstColumn is the names in the first column of the tables whose
// header's first cell is first.
func (s section) firstColumn(first string) []string {
	return slices.Sorted(maps.Keys(s.rows(first)))
}

func cells(row string) []string {
	return strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|")
}

// isRule reports whether row is a table's header rule (|---|:--|).
func isRule(row string) bool { return strings.Trim(row, "|-: ") == "" }

var backtick = regexp.MustCompile("`([^`\n]+)`")

func backticked(s string) []string {
	var names []string
	for _, m := range backtick.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// constSpecs returns the exported constants of the package in dir (its
// non-test files) whose names start with prefix.
func constSpecs(t *testing.T, dir, prefix string) map[string]ast.Expr {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]ast.Expr{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.IsExported() && strings.HasPrefix(name.Name, prefix) && i < len(vs.Values) {
						consts[name.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return consts
}

// constNames are the names of constSpecs, sorted.
func constNames(t *testing.T, dir, prefix string) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(constSpecs(t, dir, prefix)))
}

// constStrings are the values of the string constants of constSpecs.
func constStrings(t *testing.T, dir, prefix string) []string {
	t.Helper()
	var values []string
	for name, v := range constSpecs(t, dir, prefix) {
		lit, ok := v.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Errorf("%s is not a string literal", name)
			continue
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, s)
	}
	slices.Sort(values)
	return values
}
