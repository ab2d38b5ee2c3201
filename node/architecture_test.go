package node

import (
	"bytes"
	"encoding/json"
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
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// driverSurface are the methods of Core that code outside package node
// may call: Step (every input), the Ready drain, and queries that change
// nothing. A method that changes the core is an input: give it a type of
// its own in step.go and hand it to Step, so that the trace sees it and
// a replay reproduces it. Adding a name here is a claim that the method
// changes nothing; TestCoreArchitecture keeps the list and the callers in
// step.
var driverSurface = []string{
	// the input and the Ready drain
	"Step", "HasReady", "Ready",
	// read-only queries
	"AnyBusy", "Busy", "Compat", "ConfDiffers", "ConfUnchecked",
	"ConfigBusy", "ConfigEntries", "ConfigMergesLeft", "Dataset",
	"FeatureLevel", "FlexTarget", "FormatMax", "Frozen", "GuardEntitled", "GuardLease", "Instance",
	"KnownConfig", "NextTick", "NodeFrozen", "NodeMonitor", "Peer",
	"PeerNames", "PeerStatus", "PersistFailing", "PersistSeq",
	"QuorumInfo", "SelfStop", "Settled", "Snapshot", "SplitFrozen",
	"State", "Status", "Stopping", "Target", "Targets", "UpgradeVerdict",
	"ViewChanged", "Waiters", "WatchesClock",
}

// archPackage is what the test reads of `go list -json`.
type archPackage struct {
	ImportPath   string
	Dir          string
	Export       string
	Standard     bool
	ForTest      string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
}

// coreCallers type-checks every package of the module but node itself
// (with its tests) and returns, for each method of *Core used there,
// where it is used.
func coreCallers(t *testing.T) map[string][]string {
	t.Helper()
	exports, pkgs := goListExports(t, "..", "-deps", "-test", "./...")
	var ours []archPackage
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, "haven/") && !strings.HasSuffix(p.ImportPath, ".test") {
			ours = append(ours, p)
		}
	}
	fset := token.NewFileSet()
	imp := exportImporter(fset, exports)
	uses := map[string][]string{}
	check := func(path string, dir string, files []string) {
		if len(files) == 0 {
			return
		}
		var parsed []*ast.File
		for _, name := range files {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			parsed = append(parsed, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		conf.Check(path, fset, parsed, info)
		for sel, s := range info.Selections {
			fn, ok := s.Obj().(*types.Func)
			if !ok || !isCoreMethod(fn) {
				continue
			}
			pos := fset.Position(sel.Sel.Pos())
			rel, _ := filepath.Rel(filepath.Dir(mustWd(t)), pos.Filename)
			uses[fn.Name()] = append(uses[fn.Name()], fmt.Sprintf("%s:%d", rel, pos.Line))
		}
	}
	for _, p := range ours {
		if p.ImportPath == "haven/node" {
			continue
		}
		check(p.ImportPath, p.Dir, append(slices.Clone(p.GoFiles), p.TestGoFiles...))
		check(p.ImportPath+"_test", p.Dir, p.XTestGoFiles)
	}
	for name, l := range uses {
		sort.Strings(l)
		uses[name] = slices.Compact(l)
	}
	return uses
}

// goListExports runs `go list -export -json args` in dir and returns the
// export data file of each package, and the packages (but those rebuilt
// for a test: their own export is what the test sees).
func goListExports(t *testing.T, dir string, args ...string) (map[string]string, []archPackage) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-json"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var pkgs []archPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p archPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		if p.ForTest != "" {
			continue
		}
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
		pkgs = append(pkgs, p)
	}
	return exports, pkgs
}

// exportImporter imports packages from the export data of exports.
func exportImporter(fset *token.FileSet, exports map[string]string) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

func isCoreMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	rt := sig.Recv().Type()
	if p, ok := rt.(*types.Pointer); ok {
		rt = p.Elem()
	}
	n, ok := rt.(*types.Named)
	return ok && n.Obj().Name() == "Core" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "haven/node"
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// Code outside package node (the driver, the daemon, the simulation, the
// tools and every test there) changes the core only through Step: the
// methods it may call are driverSurface, the input and the queries.
func TestCoreArchitecture(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	uses := coreCallers(t)
	var names []string
	for name := range uses {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(driverSurface, name) {
			t.Errorf("Core.%s is called outside package node (%s): it is not on the driver's surface (an input through Step, or a query that changes nothing)", name, strings.Join(uses[name], ", "))
		}
	}
	// the list names only exported methods that exist
	ct := reflect.TypeFor[*Core]()
	for _, name := range driverSurface {
		if _, ok := ct.MethodByName(name); !ok {
			t.Errorf("driverSurface names Core.%s, which is no exported method", name)
		}
	}
	exported := ct.NumMethod()
	t.Logf("node.Core: %d exported methods, %d used outside package node, %d on the driver's surface", exported, len(names), len(driverSurface))
	if os.Getenv("HAVEN_ARCH_LIST") != "" {
		for i := range exported {
			m := ct.Method(i)
			t.Logf("%-24s %d %s", m.Name, len(uses[m.Name]), strings.Join(uses[m.Name], " "))
		}
	}
}
