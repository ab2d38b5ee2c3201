package constraints

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Env is what a constraint expression can see of one node.
type Env struct {
	NodeName    string
	Labels      map[string]string
	Load15      float64
	MemAvailPct float64
}

// Program is a compiled constraints expression.
type Program struct {
	Source string
	// Expr is the expression actually compiled: Source itself in the expr
	// form, its translation in the OpenSVC $(...) form.
	Expr string

	prog *vm.Program
}

// exprNode and exprEnv are the environment as the expressions see it. The
// tags give the names; a misspelt field (node.lables) is a compile error.
type exprNode struct {
	Labels      map[string]string `expr:"labels"`
	Env         string            `expr:"env"`
	Load15      float64           `expr:"load15"`
	MemAvailPct float64           `expr:"mem_avail_pct"`
}

type exprEnv struct {
	NodeName string   `expr:"nodename"`
	Node     exprNode `expr:"node"`
}

func (e Env) toExpr() exprEnv {
	labels := e.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return exprEnv{
		NodeName: e.NodeName,
		Node: exprNode{
			Labels:      labels,
			Env:         labels["env"],
			Load15:      e.Load15,
			MemAvailPct: e.MemAvailPct,
		},
	}
}

// Compile compiles src (expr form or OpenSVC $(...) form). The result must
// be boolean; anything else is an error saying why.
func Compile(src string) (*Program, error) {
	code := strings.TrimSpace(src)
	if code == "" {
		return nil, fmt.Errorf("empty expression")
	}
	if inner, ok := openSVCBody(code); ok {
		tr, err := translate(inner)
		if err != nil {
			return nil, err
		}
		code = tr
	}
	// no clock in the core: a constraint that read the wall clock would make
	// nodes disagree (determinism is correctness)
	prog, err := expr.Compile(code, expr.Env(exprEnv{}), expr.AsBool(), expr.DisableBuiltin("now"), expr.DisableBuiltin("date"))
	if err != nil {
		return nil, fmt.Errorf("compile %q: %s", code, oneLine(err.Error()))
	}
	return &Program{Source: src, Expr: code, prog: prog}, nil
}

// Eval evaluates the program against env.
func (p *Program) Eval(env Env) (bool, error) {
	if p == nil || p.prog == nil {
		return false, fmt.Errorf("constraints: program not compiled")
	}
	out, err := expr.Run(p.prog, env.toExpr())
	if err != nil {
		return false, fmt.Errorf("eval %q: %s", p.Expr, oneLine(err.Error()))
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("eval %q: result is %T, not a boolean", p.Expr, out)
	}
	return b, nil
}

// oneLine keeps the first line of an expr error message (the following
// lines draw a caret under the source, which does not fit a one-line error).
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
