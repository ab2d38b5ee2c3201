package node

import (
	"bufio"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"sort"
	"strings"
	"testing"
)

// shapeCeiling is the most mutable fields one type of the core may have
// (a field is mutable when code of the package assigns it, or an element
// of it, after the value is built). It only goes down: a type that grows
// past it is a sub-machine waiting to be carved out of it.
const shapeCeiling = 18

// typeShape is one struct type of package node: its fields, and those the
// code assigns.
type typeShape struct {
	name    string
	fields  int
	mutable []string
}

// coreShape measures package node and the packages under it (checkNode):
// their struct types with the fields the code assigns (fieldShapes), the
// number of exported methods of *Core, and the lines of each file of
// package node.
func coreShape(t *testing.T, pkgs []nodeCheck) (shapes []typeShape, exported int, lines map[string]int) {
	t.Helper()
	shapes = fieldShapes(pkgs)
	sort.SliceStable(shapes, func(i, j int) bool { return len(shapes[i].mutable) > len(shapes[j].mutable) })
	nc := pkgs[0]
	core := nc.pkg.Scope().Lookup("Core").Type()
	ms := types.NewMethodSet(types.NewPointer(core))
	for i := range ms.Len() {
		if ms.At(i).Obj().Exported() {
			exported++
		}
	}
	return shapes, exported, nc.lines
}

// fieldShapes returns the struct types of the packages with the fields
// their code assigns (x.f = …, x.f op= …, x.f++, x.f[k] = …, delete(x.f,
// k), clear(x.f)), in any of the packages: package node assigning a field
// of a type of the vocabulary counts for that type. The types of a
// package under node are named with it ("persist.Book").
func fieldShapes(pkgs []nodeCheck) (shapes []typeShape) {
	ours := func(p *types.Package) bool {
		return p.Path() == "haven/node" || strings.HasPrefix(p.Path(), "haven/node/")
	}
	// owner: every field of a struct type of the packages, to its type,
	// for the package as type-checked and as imported by the others
	owner := map[*types.Var]string{}
	count := map[string]int{}
	var names []string
	own := func(pkg *types.Package, list bool) {
		prefix := ""
		if pkg.Path() != "haven/node" {
			prefix = pkg.Name() + "."
		}
		for _, n := range pkg.Scope().Names() {
			tn, ok := pkg.Scope().Lookup(n).(*types.TypeName)
			if !ok || tn.IsAlias() { // an alias is measured where it is declared
				continue
			}
			st, ok := tn.Type().Underlying().(*types.Struct)
			if !ok {
				continue
			}
			if list {
				names = append(names, prefix+n)
				count[prefix+n] = st.NumFields()
			}
			for i := range st.NumFields() {
				owner[st.Field(i)] = prefix + n
			}
		}
	}
	for _, nc := range pkgs {
		own(nc.pkg, true)
		for _, p := range nc.pkg.Imports() {
			if ours(p) {
				own(p, false)
			}
		}
	}
	mut := map[string]map[string]bool{}
	var info *types.Info
	assigned := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.ParenExpr:
				e = x.X
				continue
			case *ast.IndexExpr:
				e = x.X
				continue
			case *ast.StarExpr:
				e = x.X
				continue
			case *ast.SelectorExpr:
				s, ok := info.Selections[x]
				if !ok || s.Kind() != types.FieldVal {
					return
				}
				v := s.Obj().(*types.Var)
				if o, ok := owner[v]; ok {
					if mut[o] == nil {
						mut[o] = map[string]bool{}
					}
					mut[o][v.Name()] = true
				}
			}
			return
		}
	}
	for _, nc := range pkgs {
		info = nc.info
		for _, f := range nc.files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.AssignStmt:
					if x.Tok != token.DEFINE {
						for _, l := range x.Lhs {
							assigned(l)
						}
					}
				case *ast.IncDecStmt:
					assigned(x.X)
				case *ast.CallExpr:
					if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(x.Args) > 0 {
						if _, builtin := info.Uses[id].(*types.Builtin); builtin {
							assigned(x.Args[0])
						}
					}
				}
				return true
			})
		}
	}
	for _, n := range names {
		var m []string
		for f := range mut[n] {
			m = append(m, f)
		}
		sort.Strings(m)
		shapes = append(shapes, typeShape{name: n, fields: count[n], mutable: m})
	}
	return shapes
}

func countLines(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// TestCoreShape measures the core (go test ./node -run TestCoreShape -v
// prints the figures: exported methods of *Core, the mutable fields of
// each type, the lines of each file) and holds the most mutable fields of
// one type under shapeCeiling.
func TestCoreShape(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks package node")
	}
	pkgs := checkNode(t)
	shapes, exported, lines := coreShape(t, pkgs)
	t.Logf("*Core: %d exported methods", exported)
	for _, s := range shapes {
		if len(s.mutable) == 0 {
			continue
		}
		t.Logf("type %-20s %3d fields, %3d mutable: %s", s.name, s.fields, len(s.mutable), strings.Join(s.mutable, " "))
	}
	var files []string
	total := 0
	for f, n := range lines {
		files = append(files, f)
		total += n
	}
	sort.Slice(files, func(i, j int) bool { return lines[files[i]] > lines[files[j]] })
	for _, f := range files {
		t.Logf("%-20s %4d lines", f, lines[f])
	}
	t.Logf("%d files, %d lines", len(files), total)
	for _, s := range shapes {
		if len(s.mutable) > shapeCeiling {
			t.Errorf("type %s has %d mutable fields, more than %d: carve a sub-machine out of it", s.name, len(s.mutable), shapeCeiling)
		}
	}
	for _, nc := range pkgs[1:] {
		total := 0
		for _, n := range nc.lines {
			total += n
		}
		t.Logf("package %s: %d files, %d lines", nc.pkg.Path(), len(nc.files), total)
	}
	coreArrows(t, pkgs[0])
}
