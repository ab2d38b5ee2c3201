package monitor

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The core packages are pure (DESIGN.md): no goroutine, no clock, no
// command, no socket, no logging. This test enforces it on their non-test
// files: imports from an allow-list only, no go statement, no reading of
// the wall clock or timers.
var corePackages = []string{"monitor", "placement", "affinity", "constraints", "view", "node"}

var allowedImports = map[string]bool{
	// haven
	"haven/dataset": true, "haven/config": true, "haven/constraints": true,
	"haven/placement": true, "haven/affinity": true, "haven/monitor": true,
	"haven/view": true, "haven/node": true, "haven/status": true,
	// standard library: pure computation only
	"bytes": true, "cmp": true, "errors": true, "fmt": true, "hash": true, "hash/fnv": true,
	"maps": true, "math": true, "regexp": true, "reflect": true, "slices": true, "sort": true,
	"strconv": true, "strings": true, "time": true, "unicode": true, "unicode/utf8": true,
}

// allowedPrefixes are third-party modules a core package may use.
var allowedPrefixes = map[string][]string{
	"constraints": {"github.com/expr-lang/expr"},
}

// forbiddenCalls are package-qualified identifiers that read the clock or
// schedule work.
var forbiddenCalls = map[string]bool{
	"time.Now": true, "time.Since": true, "time.Until": true, "time.Sleep": true,
	"time.After": true, "time.AfterFunc": true, "time.Tick": true,
	"time.NewTimer": true, "time.NewTicker": true,
}

func TestCorePackagesArePure(t *testing.T) {
	for _, pkg := range corePackages {
		dir := filepath.Join("..", pkg)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("read %s: %v", dir, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			checkFile(t.Errorf, pkg, path, fset, f)
		}
	}
}

func checkFile(report func(format string, args ...any), pkg, path string, fset *token.FileSet, f *ast.File) {
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !importAllowed(pkg, p) {
			report("%s: got import %q, want only the allow-list (pure core)", path, p)
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = p
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.GoStmt:
			report("%s: got a go statement, want none (pure core)", fset.Position(x.Pos()))
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				if p, ok := local[id.Name]; ok && forbiddenCalls[p+"."+x.Sel.Name] {
					report("%s: got %s.%s, want no clock in the core (use Snapshot.Now)", fset.Position(x.Pos()), p, x.Sel.Name)
				}
			}
		}
		return true
	})
}

func importAllowed(pkg, p string) bool {
	if allowedImports[p] {
		return true
	}
	for _, pre := range allowedPrefixes[pkg] {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

func TestImportCheckCatchesViolations(t *testing.T) {
	src := `package x
import (
	"os"
	"time"
)
func f() { go func() {}(); _ = time.Now(); _ = os.Args }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	checkFile(func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }, "monitor", "x.go", fset, f)
	if len(got) != 3 {
		t.Errorf("got %d violations %v, want 3 (os import, go statement, time.Now)", len(got), got)
	}
}
