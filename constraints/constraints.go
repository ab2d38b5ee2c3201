package constraints

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
	// implementation fields are private
}

// Compile compiles src (expr form or OpenSVC $(...) form). The result must
// be boolean; anything else is an error saying why.
func Compile(src string) (*Program, error) {
	panic("TODO")
}

// Eval evaluates the program against env.
func (p *Program) Eval(env Env) (bool, error) {
	panic("TODO")
}
