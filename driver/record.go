package driver

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node"
)

// Recording is a run of a core as the core saw it, to replay it on a
// fresh core: every input the driver handed it (Trace), every Ready the
// driver took (the points where the core hands out what it holds: its
// numbering of the states to write depends on them), and every read of
// the shell's part of the view (node.Local, wrapped by Local). What the
// core did is kept as lines (Out): a replay that prints other lines took
// other inputs, or the run had an input the trace did not see.
type Recording struct {
	steps []recStep
	out   []string
	// infos and svcs are the answers of the shell's Local, in order.
	infos []dataset.Node
	svcs  []map[string]*config.ServiceConfig
	// inCore: the core runs an input or hands out a Ready (its reads of
	// the shell's view are inputs then; a query's are not)
	inCore bool
}

// recStep is one entry of a recording: an input, or a Ready taken.
type recStep struct {
	in    node.Input
	ready bool
}

// Record attaches r to d: from now on every input and every Ready of d
// is recorded.
func (r *Recording) Record(d *Driver) { d.rec = r }

// Inputs are the inputs recorded, in order.
func (r *Recording) Inputs() []node.Input {
	var ins []node.Input
	for _, s := range r.steps {
		if !s.ready {
			ins = append(ins, s.in)
		}
	}
	return ins
}

// Out is what the core did in the run: its Readies, and its reads of the
// shell's view, as lines.
func (r *Recording) Out() []string { return r.out }

// Local wraps the shell's part of the view (node.Config.Local) so that
// its answers are recorded: they are inputs of the core too.
func (r *Recording) Local(l node.Local) node.Local { return recLocal{r, l} }

type recLocal struct {
	r *Recording
	l node.Local
}

func (l recLocal) LocalInfo() dataset.Node {
	n := l.l.LocalInfo()
	if !l.r.inCore {
		return n // a query's: no input
	}
	l.r.infos = append(l.r.infos, n.Clone())
	l.r.out = append(l.r.out, "local info")
	return n
}

func (l recLocal) LocalServices() map[string]*config.ServiceConfig {
	s := l.l.LocalServices()
	if !l.r.inCore {
		return s
	}
	l.r.svcs = append(l.r.svcs, maps.Clone(s))
	l.r.out = append(l.r.out, "local services")
	return s
}

// Replay runs the recorded inputs on a new core made of cfg (its Local
// replaced by the recorded answers) and st, taking its Readies where the
// run took them. It returns the core and what it did, to compare with
// Out. cfg.Local is nil when the run's was.
func (r *Recording) Replay(cfg node.Config, st node.State) (*node.Core, []string) {
	return r.replay(cfg, st, nil)
}

// replay is Replay; between (may be nil) is called on the core after
// each input and each Ready, outside them (what it reads of the shell's
// view is the last answer read inside, and no input).
func (r *Recording) replay(cfg node.Config, st node.State, between func(*node.Core)) (*node.Core, []string) {
	p := &replayLocal{r: r}
	if cfg.Local != nil {
		cfg.Local = p
	}
	c := node.New(cfg, st)
	for _, s := range r.steps {
		p.inCore = true
		if s.ready {
			p.out = append(p.out, Describe(c.Ready())...)
		} else {
			c.Step(s.in)
		}
		p.inCore = false
		if between != nil {
			between(c)
		}
	}
	return c, p.out
}

// replayLocal answers the core's reads of the shell's view with the
// answers recorded, in order (the zero value once they run out: the
// replay then differs from the run). Outside an input or a Ready
// (inCore false) a read is a query's: it gets the last answer again.
type replayLocal struct {
	r         *Recording
	info, svc int
	inCore    bool
	out       []string
}

func (p *replayLocal) LocalInfo() dataset.Node {
	if !p.inCore {
		if p.info == 0 {
			return dataset.Node{}
		}
		return p.r.infos[p.info-1].Clone()
	}
	p.out = append(p.out, "local info")
	if p.info >= len(p.r.infos) {
		return dataset.Node{}
	}
	p.info++
	return p.r.infos[p.info-1].Clone()
}

func (p *replayLocal) LocalServices() map[string]*config.ServiceConfig {
	if !p.inCore {
		if p.svc == 0 {
			return nil
		}
		return maps.Clone(p.r.svcs[p.svc-1])
	}
	p.out = append(p.out, "local services")
	if p.svc >= len(p.r.svcs) {
		return nil
	}
	p.svc++
	return maps.Clone(p.r.svcs[p.svc-1])
}

// Describe prints what a Ready asks of the driver, a line per item, in
// the order of its fields: what a replay compares.
func Describe(rd node.Ready) []string {
	var out []string
	add := func(kind string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b = fmt.Appendf(nil, "%+v", v)
		}
		out = append(out, kind+" "+string(b))
	}
	if rd.Persist != nil {
		add(fmt.Sprintf("persist %d", rd.PersistSeq), rd.Persist)
	}
	if rd.Publish {
		out = append(out, "publish")
	}
	for _, e := range rd.Events {
		add(fmt.Sprintf("event %T", e), e)
	}
	for _, a := range rd.Answers {
		out = append(out, fmt.Sprintf("answer %d id=%q result=%q err=%v bad=%v was=%q", a.Ticket, a.ID, a.Result, a.Err, a.Bad, a.WasFrozen))
	}
	for _, a := range rd.Run {
		add("run", a)
	}
	for _, ck := range rd.Check {
		add("check", ck)
	}
	for _, p := range rd.Probes {
		add("probe", p)
	}
	for _, f := range rd.Fences {
		add("fence", f)
	}
	for _, na := range rd.NodeActions {
		add("node action", na)
	}
	for _, op := range rd.Configs {
		out = append(out, fmt.Sprintf("config %s %s (config %v)", op.Service, op.What, op.Config != nil))
	}
	for _, a := range rd.Ordered {
		add("ordered", a)
	}
	for _, svc := range rd.Announce {
		out = append(out, "announce "+svc)
	}
	if !rd.WakeAt.IsZero() {
		out = append(out, "wake "+rd.WakeAt.Format(time.RFC3339Nano))
	}
	return out
}

// Without is the recording less the inputs drop matches (to check that a
// replay notices an input missing from a trace).
func (r *Recording) Without(drop func(node.Input) bool) *Recording {
	cp := *r
	cp.steps = nil
	for _, s := range r.steps {
		if s.ready || !drop(s.in) {
			cp.steps = append(cp.steps, s)
		}
	}
	return &cp
}
