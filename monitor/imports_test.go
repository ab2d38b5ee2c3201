package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The core packages are pure (docs/design-notes.md, README "Layout"): no goroutine, no clock, no
// command, no socket, no file, no logging. TestCorePackagesArePure
// enforces it over everything they reach (go list -deps), not only over
// their own imports, so that a dependency cannot bring IO back in.
var corePackages = []string{"monitor", "placement", "affinity", "constraints", "node/view", "dataset/status", "dataset", "quorum"}

// optionalCorePackages join corePackages when their directory exists.
var optionalCorePackages = []string{"node"}

// forbiddenDeps may appear nowhere in the closure of the core (an entry
// ending in "/" forbids the packages under it). The standard library's
// os and syscall are not here: fmt and time reach them; the rule below
// keeps them out of every package of ours and every third-party one.
var forbiddenDeps = []string{
	"net", "net/http", "net/http/", "os/exec", "os/signal", "log", "log/slog", "plugin",
	"go.uber.org/zap", "go.uber.org/zap/",
	"github.com/hashicorp/memberlist", "github.com/hashicorp/memberlist/",
	"github.com/BurntSushi/toml", "github.com/BurntSushi/toml/",
	"golang.org/x/sys/", "golang.org/x/net/",
}

// forbiddenDirect may not be imported by a package of the closure that is
// not in the standard library: ours (the core, config, cmdline...) and the
// third-party ones (expr).
var forbiddenDirect = []string{"os", "syscall", "io/ioutil", "path/filepath", "os/user"}

// forbiddenCalls are package-qualified identifiers that read the clock,
// schedule work or touch files; the non-test source of our packages in the
// closure may not use them.
var forbiddenCalls = map[string]bool{
	"time.Now": true, "time.Since": true, "time.Until": true, "time.Sleep": true,
	"time.After": true, "time.AfterFunc": true, "time.Tick": true,
	"time.NewTimer": true, "time.NewTicker": true,
	"os.Open": true, "os.OpenFile": true, "os.OpenRoot": true, "os.OpenInRoot": true,
	"os.ReadFile": true, "os.WriteFile": true, "os.Create": true, "os.ReadDir": true,
}

// listedPackage is what the test reads of `go list -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
}

// goList runs `go ARGS` (a list -json) at the module's root and decodes
// the packages it prints.
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var listed []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		listed = append(listed, p)
	}
	return listed
}

func TestCorePackagesArePure(t *testing.T) {
	pkgs := corePackages
	for _, p := range optionalCorePackages {
		if fi, err := os.Stat(filepath.Join("..", p)); err == nil && fi.IsDir() {
			pkgs = append(pkgs, p)
		}
	}
	args := []string{"list", "-deps", "-json"}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	listed := goList(t, args...)
	for _, p := range pkgs {
		if !slices.ContainsFunc(listed, func(l listedPackage) bool { return l.ImportPath == "haven/"+p }) {
			t.Fatalf("go list did not list haven/%s", p)
		}
	}
	for _, v := range depViolations(listed) {
		t.Error(v)
	}
	for _, p := range listed {
		if !strings.HasPrefix(p.ImportPath, "haven/") {
			continue
		}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			checkFile(t.Errorf, path, fset, f)
		}
	}
}

// depViolations lists the forbidden packages in the closure, each with a
// path from a core package that reaches it, and the forbidden direct
// imports of the packages that are not in the standard library.
func depViolations(listed []listedPackage) []string {
	byPath := map[string]listedPackage{}
	for _, p := range listed {
		byPath[p.ImportPath] = p
	}
	var out []string
	for _, p := range listed {
		if isForbidden(p.ImportPath, forbiddenDeps) {
			out = append(out, fmt.Sprintf("got %s in the closure of the core (%s), want none (pure core)",
				p.ImportPath, strings.Join(importChain(byPath, p.ImportPath), " -> ")))
		}
		if p.Standard {
			continue
		}
		for _, imp := range p.Imports {
			if isForbidden(imp, forbiddenDirect) {
				out = append(out, fmt.Sprintf("got %s importing %s (%s), want no file or system call in the core's reach",
					p.ImportPath, imp, strings.Join(importChain(byPath, p.ImportPath), " -> ")))
			}
		}
	}
	return out
}

func isForbidden(path string, list []string) bool {
	for _, f := range list {
		if path == f || strings.HasSuffix(f, "/") && strings.HasPrefix(path, f) {
			return true
		}
	}
	return false
}

// importChain returns a shortest import path from one of ours ("haven/...")
// that is not imported by another of ours to target.
func importChain(byPath map[string]listedPackage, target string) []string {
	imported := map[string]bool{}
	for _, p := range byPath {
		for _, imp := range p.Imports {
			imported[imp] = true
		}
	}
	prev := map[string]string{}
	var queue []string
	for path := range byPath {
		if strings.HasPrefix(path, "haven/") && !imported[path] {
			queue = append(queue, path)
			prev[path] = ""
		}
	}
	slices.Sort(queue)
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == target {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, imp := range byPath[cur].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return []string{target}
}

// checkFile reports the go statements and forbidden calls of one file.
func checkFile(report func(format string, args ...any), path string, fset *token.FileSet, f *ast.File) {
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
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
			if id, ok := x.X.(*ast.Ident); ok && id.Obj == nil {
				if p, ok := local[id.Name]; ok && forbiddenCalls[p+"."+x.Sel.Name] {
					report("%s: got %s.%s, want no clock, timer or file in the core (time is Snapshot.Now)", fset.Position(x.Pos()), p, x.Sel.Name)
				}
			}
		}
		return true
	})
}

func TestPurityCheckCatchesViolations(t *testing.T) {
	src := `package x
import (
	"os"
	t "time"
)
func f() { go func() {}(); _ = t.Now(); _, _ = os.ReadFile("x"); _ = os.Args }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	checkFile(func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }, "x.go", fset, f)
	if len(got) != 3 {
		t.Errorf("got %d violations %v, want 3 (go statement, time.Now, os.ReadFile)", len(got), got)
	}

	listed := []listedPackage{
		{ImportPath: "haven/monitor", Imports: []string{"fmt", "haven/config"}},
		{ImportPath: "haven/config", Imports: []string{"fmt", "os", "github.com/BurntSushi/toml"}},
		{ImportPath: "github.com/BurntSushi/toml", Imports: []string{"os"}},
		{ImportPath: "fmt", Standard: true, Imports: []string{"os"}},
		{ImportPath: "os", Standard: true, Imports: []string{"syscall"}},
		{ImportPath: "syscall", Standard: true},
	}
	got = depViolations(listed)
	want := []string{
		"got haven/config importing os (haven/monitor -> haven/config), want no file or system call in the core's reach",
		"got github.com/BurntSushi/toml in the closure of the core (haven/monitor -> haven/config -> github.com/BurntSushi/toml), want none (pure core)",
		"got github.com/BurntSushi/toml importing os (haven/monitor -> haven/config -> github.com/BurntSushi/toml), want no file or system call in the core's reach",
	}
	if !slices.Equal(got, want) {
		t.Errorf("depViolations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
