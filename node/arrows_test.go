package node

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// arrowsCeiling is the most arrows between the files of package node that
// may run back up (fileGraph), and loopCeiling the most arrows inside
// loops of files that use each other. Both only go down: a new arrow that
// runs back up is a rule reaching into a file that stands above it, which
// belongs in a package of its own below node (the sub-machines, the
// vocabulary) or in the file that calls it.
const (
	arrowsCeiling = 5
	loopCeiling   = 15
)

// nodeCheck is a package type-checked: its non-test files, in the order
// of go list, with the lines of each.
type nodeCheck struct {
	fset  *token.FileSet
	files []*ast.File
	names []string // the base name of each file
	lines map[string]int
	info  *types.Info
	pkg   *types.Package
}

// checkNode type-checks the non-test files of package node (first) and of
// the packages under it but the test runner node/datadriven.
func checkNode(t *testing.T) []nodeCheck {
	t.Helper()
	exports, pkgs := goListExports(t, ".", "-deps", "./...")
	fset := token.NewFileSet()
	imp := exportImporter(fset, exports)
	var out []nodeCheck
	for _, p := range pkgs {
		if p.ImportPath != "haven/node" && (!strings.HasPrefix(p.ImportPath, "haven/node/") || p.ImportPath == "haven/node/datadriven") {
			continue
		}
		nc := nodeCheck{fset: fset, lines: map[string]int{}}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			nc.files = append(nc.files, f)
			nc.names = append(nc.names, name)
			nc.lines[name] = countLines(t, path)
		}
		nc.info = &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
		pkg, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, nc.files, nc.info)
		if err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		nc.pkg = pkg
		if p.ImportPath == "haven/node" {
			out = append([]nodeCheck{nc}, out...)
		} else {
			out = append(out, nc)
		}
	}
	return out
}

// fileGraph is the graph of the files of package node: file a uses file b
// when a names an identifier (type, func, method, var, const, field)
// declared in b. Each file stands on a floor above the files it uses;
// files that use each other in a loop cannot all be ordered, and the
// arrows that close the loops run back up (place). loop counts every
// arrow between files of one strongly connected component (files that
// use each other, through others maybe): the figure no placement can
// beat, as long as the loops are there.
type fileGraph struct {
	files  []string
	uses   map[string]map[string]int // uses[a][b]: how many names of b a names
	arrows int
	back   [][2]string
	loop   int
	order  []string // top to bottom, by floor
	floor  map[string]int
}

func newFileGraph(nc nodeCheck) *fileGraph {
	g := &fileGraph{uses: map[string]map[string]int{}, floor: map[string]int{}}
	g.files = slices.Clone(nc.names)
	sort.Strings(g.files)
	for i, f := range nc.files {
		from := nc.names[i]
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := nc.info.Uses[id]
			if obj == nil || obj.Pkg() != nc.pkg || !obj.Pos().IsValid() {
				return true
			}
			to := filepath.Base(nc.fset.Position(obj.Pos()).Filename)
			if to == from || !slices.Contains(g.files, to) {
				return true
			}
			if g.uses[from] == nil {
				g.uses[from] = map[string]int{}
			}
			g.uses[from][to]++
			return true
		})
	}
	for _, m := range g.uses {
		g.arrows += len(m)
	}
	g.place()
	g.loops()
	return g
}

// place breaks the loops and draws the floors: a depth-first walk from
// each file in name order (the files it uses in name order too) meets an
// arrow to a file still on its path only on a loop; that arrow runs back
// up, and the others place each file one floor above the highest it uses.
func (g *fileGraph) place() {
	const onPath, done = 1, 2
	state := map[string]int{}
	var walk func(a string)
	walk = func(a string) {
		state[a] = onPath
		for _, b := range g.used(a) {
			switch state[b] {
			case onPath:
				g.back = append(g.back, [2]string{a, b})
			case 0:
				walk(b)
			}
		}
		state[a] = done
	}
	for _, f := range g.files {
		if state[f] == 0 {
			walk(f)
		}
	}
	var floor func(a string) int
	floor = func(a string) int {
		if fl, ok := g.floor[a]; ok {
			return fl
		}
		fl := 1
		for _, b := range g.used(a) {
			if !slices.Contains(g.back, [2]string{a, b}) {
				fl = max(fl, floor(b)+1)
			}
		}
		g.floor[a] = fl
		return fl
	}
	g.order = slices.Clone(g.files)
	for _, f := range g.order {
		floor(f)
	}
	sort.SliceStable(g.order, func(i, j int) bool { return g.floor[g.order[i]] > g.floor[g.order[j]] })
	sort.Slice(g.back, func(i, j int) bool {
		if g.back[i][0] != g.back[j][0] {
			return g.back[i][0] < g.back[j][0]
		}
		return g.back[i][1] < g.back[j][1]
	})
}

// used returns the files a uses, in name order.
func (g *fileGraph) used(a string) []string {
	var l []string
	for b := range g.uses[a] {
		l = append(l, b)
	}
	sort.Strings(l)
	return l
}

// loops counts the arrows inside strongly connected components (Tarjan).
func (g *fileGraph) loops() {
	index, low, comp := map[string]int{}, map[string]int{}, map[string]int{}
	on := map[string]bool{}
	var stack []string
	n, c := 0, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		for _, w := range g.used(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp[w] = c
				if w == v {
					break
				}
			}
			c++
		}
	}
	for _, f := range g.files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	for a, m := range g.uses {
		for b := range m {
			if comp[a] == comp[b] {
				g.loop++
			}
		}
	}
}

// sheet prints the floors from the top down, and the arrows that run back
// up.
func (g *fileGraph) sheet(lines map[string]int) []string {
	var out []string
	for _, f := range g.order {
		out = append(out, fmt.Sprintf("floor %2d  %-20s %4d lines", g.floor[f], f, lines[f]))
	}
	for _, b := range g.back {
		out = append(out, fmt.Sprintf("back up: %s -> %s (%d names)", b[0], b[1], g.uses[b[0]][b[1]]))
	}
	return out
}

// coreArrows, run by TestCoreShape, measures the arrows between the files of
// package node, and those that run back up, under their ceilings.
func coreArrows(t *testing.T, nc nodeCheck) {
	g := newFileGraph(nc)
	if testing.Verbose() {
		t.Log(strings.Join(g.sheet(nc.lines), "\n"))
	}
	t.Logf("package node: %d files, %d arrows between them, %d run back up, %d inside loops", len(g.files), g.arrows, len(g.back), g.loop)
	if len(g.back) > arrowsCeiling {
		t.Errorf("%d arrows run back up inside package node, more than %d", len(g.back), arrowsCeiling)
	}
	if g.loop > loopCeiling {
		t.Errorf("%d arrows inside loops of package node, more than %d", g.loop, loopCeiling)
	}
}
