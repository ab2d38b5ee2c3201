package constraints

import (
	"strings"
	"testing"
)

var n1 = Env{NodeName: "node1", Labels: map[string]string{"env": "DEV", "az": "a"}, Load15: 0.5, MemAvailPct: 40}
var n2 = Env{NodeName: "node2", Labels: map[string]string{"env": "PRD"}, Load15: 3, MemAvailPct: 90}
var n3 = Env{NodeName: "node3"} // no labels at all

func TestEval(t *testing.T) {
	tests := []struct {
		src        string
		n1, n2, n3 bool
	}{
		// expr form
		{`nodename == "node1"`, true, false, false},
		{`node.labels.env in ["DEV", "TST"]`, true, false, false},
		{`node.env == "PRD"`, false, true, false},
		{`node.env == ""`, false, false, true},
		{`node.labels.az == "a" or node.load15 > 2`, true, true, false},
		{`node.mem_avail_pct >= 50`, false, true, false},
		{`not (nodename in ["node1", "node2"])`, false, false, true},
		{`"az" in node.labels`, true, false, false},
		{`true`, true, true, true},
		// OpenSVC form
		{`$("{nodename}"=="node1" or "{node.env}" in (DEV, TST))`, true, false, false},
		{`$("{nodename}" == "node2")`, false, true, false},
		{`$("{node.env}" in (PRD))`, false, true, false},
		{`$("{node.az}" == "a")`, true, false, false},
		{`$("{node.labels.az}" == "a")`, true, false, false},
		{`$(not "{node.env}" in ("DEV", 'TST'))`, false, true, true},
		{`$(not "{node.env}" == "DEV" and ("{nodename}" != "node3" or not True))`, false, true, false},
		{`$(("{node.env}" == "DEV" or not "{node.env}" == "PRD") and "{nodename}" == "node3")`, false, false, true},
		{`$("{node.rack}" in (1, 2))`, false, false, false},
		{`$({node.load15} > 1 and True)`, false, true, false},
		{`$("{nodename}-x" == "node3-x")`, false, false, true},
		{` $( "{nodename}" != "node1" ) `, false, true, true},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.src, err)
			continue
		}
		for i, c := range []struct {
			env  Env
			want bool
		}{{n1, tt.n1}, {n2, tt.n2}, {n3, tt.n3}} {
			got, err := p.Eval(c.env)
			if err != nil {
				t.Errorf("Eval(%q, n%d): %v", tt.src, i+1, err)
				continue
			}
			if got != c.want {
				t.Errorf("Eval(%q, n%d) = %v, want %v (expr %q)", tt.src, i+1, got, c.want, p.Expr)
			}
		}
	}
}

func TestTranslate(t *testing.T) {
	tests := []struct{ src, want string }{
		{`$("{nodename}"=="node1" or "{node.env}" in (DEV, TST))`, `nodename=="node1" or node.env in ["DEV", "TST"]`},
		{`$("{node.rack}" in (1, 2))`, `node.labels["rack"] in ["1", "2"]`},
		{`$(not "{nodename}" == "a")`, `not ( nodename == "a")`},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.src, err)
		}
		if p.Expr != tt.want || p.Source != tt.src {
			t.Errorf("Compile(%q).Expr = %q, want %q", tt.src, p.Expr, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{``, "empty"},
		{`nodename`, "bool"},
		{`node.load15 + 1`, "bool"},
		{`nodename ==`, "compile"},
		{`node.lables.env == "x"`, "lables"},
		{`unknown_var == 1`, "unknown_var"},
		{`$("{nodename}" == "a"`, "compile"},
		{`$("{svcname}" == "a")`, "unknown reference {svcname}"},
		{`$("{nodename} == "a")`, "unterminated"},
		{`$("{node.env}" in (DEV, TST)`, "unterminated list"},
		{`$(True and "{nodename}" ==)`, "compile"},
		{`$("{node.env}" in (DEV, (TST)))`, "nested"},
		// the wall clock is not data of the snapshot: nodes would disagree
		{`now().Hour() < 12`, "now"},
		{`date("2026-01-01") < now()`, "date"},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src)
		if err == nil {
			t.Errorf("Compile(%q) = %q, want an error containing %q", tt.src, p.Expr, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%q) error = %q, want it to contain %q", tt.src, err, tt.want)
		}
	}
}

func TestEvalNil(t *testing.T) {
	var p *Program
	if _, err := p.Eval(n1); err == nil {
		t.Error("Eval on a nil program: want an error")
	}
}
