package placement

import (
	"haven/affinity"
	"haven/config"
	"haven/constraints"
	"haven/dataset"
)

// filter collects the filters a node fails: the first one always, every
// one (with details) when all is set. The ranking reads only first, so it is
// the same whether all is set or not.
type filter struct {
	all   bool
	first string
	list  []string
}

// fail records a failed filter; detail, when not empty, replaces reason in
// the list. It reports whether the next filters must be checked too.
func (f *filter) fail(reason, detail string) (more bool) {
	if f.first == "" {
		f.first = reason
	}
	if !f.all {
		return false
	}
	if detail == "" {
		detail = reason
	}
	f.list = append(f.list, detail)
	return true
}

// nodeFilter checks the node filters of a node with a view in order:
// availability, node frozen, constraints (an evaluation error is detailed
// as such), hard affinities.
func nodeFilter(in *Input, rec *record, env affinity.Env, f *filter) {
	node := rec.name
	if rec.avail != "" && !f.fail(rec.avail, "") {
		return
	}
	if rec.frozen != "" && !f.fail(rec.frozen, "") {
		return
	}
	if in.ConstraintOK != nil && !in.ConstraintOK[node] {
		detail := ""
		if e := in.ConstraintErr[node]; e != "" && f.all {
			detail = ReasonConstraintError + ": " + e
		}
		if !f.fail(ReasonConstraints, detail) {
			return
		}
	}
	if affinity.HasHard(in.Config) {
		affinity.CheckHard(in.Config, node, env, func(why string) bool { return f.fail(why, "") })
	}
}

// instanceFilter checks the instance filters: frozen, excluded (a
// monitor_action switch), failed, then a restart ladder that gave up.
func instanceFilter(inst *InstanceState, f *filter) {
	if inst.Frozen && !f.fail(ReasonInstanceFrozen, "") {
		return
	}
	if inst.Excluded != "" && !f.fail(ReasonExcluded, ReasonExcluded+": "+inst.Excluded) {
		return
	}
	switch inst.State {
	case dataset.StartFailed:
		if !f.fail(ReasonStartFailed, "") {
			return
		}
	case dataset.StopFailed:
		if !f.fail(ReasonStopFailed, "") {
			return
		}
	}
	if inst.GaveUp != "" {
		f.fail(ReasonGaveUp, ReasonGaveUp+": "+inst.GaveUp)
	}
}

// EvalConstraints evaluates cfg's constraints on every viewed node, with the
// environment the node announced. It returns nil when the service has no
// constraints (nil means true everywhere). An evaluation error counts as
// false.
func EvalConstraints(cfg *config.ServiceConfig, views map[string]NodeView) map[string]bool {
	ok, _ := ConstraintResults(cfg, views)
	return ok
}

// ConstraintResults is EvalConstraints that also returns, per node, why the
// evaluation failed there (nil when it failed nowhere): the ranking counts
// such a node as a violation, the verdicts show the error.
func ConstraintResults(cfg *config.ServiceConfig, views map[string]NodeView) (ok map[string]bool, errs map[string]string) {
	if cfg.Constraint == nil {
		return nil, nil
	}
	ok = make(map[string]bool, len(views))
	for name, v := range views {
		res, err := cfg.Constraint.Eval(constraints.Env{
			NodeName:    name,
			Labels:      v.Data.Labels,
			Load15:      v.Data.Load15,
			MemAvailPct: v.Data.MemAvailPct,
		})
		ok[name] = err == nil && res
		if err != nil {
			if errs == nil {
				errs = make(map[string]string)
			}
			errs[name] = err.Error()
		}
	}
	return ok, errs
}
