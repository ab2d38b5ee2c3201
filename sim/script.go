package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
)

// Result is the outcome of a scenario run.
type Result struct {
	// Output is the golden text: the timeline, the commands, the expect
	// results and the final state.
	Output string
	// Failed lists the expect lines that did not hold, and the commands
	// that failed, as "file:line: ...".
	Failed []string
	// Simulated is the simulated time the scenario covered.
	Simulated time.Duration
	// Events are the node cores' typed events, in the order emitted.
	Events []Event
	// Runs are the cores' runs, recorded when asked (runScript).
	Runs []CoreRun
}

// RunScript runs a scenario (see the package doc for the format). name
// prefixes the messages of Result.Failed. A malformed scenario is an error.
func RunScript(name, text string) (*Result, error) {
	return RunScriptAt("", name, text)
}

// RunScriptAt is RunScript for a scenario file in dir: a snapshot line's
// file is read relative to dir.
func RunScriptAt(dir, name, text string) (*Result, error) {
	return runScript(dir, name, text, false)
}

// runScript is RunScriptAt; record keeps the runs of the cores
// (Result.Runs).
func runScript(dir, name, text string, record bool) (*Result, error) {
	r := &runner{name: name, dir: dir, res: &Result{}, record: record}
	for i, raw := range strings.Split(text, "\n") {
		r.line = i + 1
		toks, err := tokenize(raw)
		if err != nil {
			return nil, r.errf("%v", err)
		}
		if len(toks) == 0 {
			continue
		}
		if err := r.exec(toks, strings.TrimSpace(raw)); err != nil {
			return nil, r.errf("%v", err)
		}
	}
	if r.c == nil {
		return nil, r.errf("no cluster line")
	}
	r.boot()
	r.c.lines = append(r.c.lines, "", r.c.FinalState())
	r.res.Output = strings.Join(r.c.lines, "\n") + "\n"
	r.res.Simulated = r.c.Now()
	r.res.Events = r.c.events
	r.res.Runs = r.c.runs
	return r.res, nil
}

type runner struct {
	name   string
	dir    string
	line   int
	c      *Cluster
	booted bool
	res    *Result
	// snapshot: the cluster was built from a snapshot (snapshot line):
	// the daemons of the nodes that were up start, and the cluster
	// settles, before the first command
	snapshot bool
	// record: the cores' runs are recorded (Options.Record)
	record bool
}

func (r *runner) errf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.name, r.line, fmt.Sprintf(format, args...))
}

// boot starts every daemon at the first command that is not a setup line.
func (r *runner) boot() {
	if r.booted {
		return
	}
	r.booted = true
	if r.snapshot {
		r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  > the daemons of the snapshot's live nodes start; the cluster settles")
		if err := r.c.bootSnapshot(); err != nil {
			r.fail("%v", err)
		}
		return
	}
	r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  > every daemon starts")
	for _, n := range r.c.names {
		if err := r.c.Start(n, 0); err != nil {
			r.fail("start %s: %v", n, err)
		}
	}
}

func (r *runner) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.res.Failed = append(r.res.Failed, fmt.Sprintf("%s:%d: %s", r.name, r.line, msg))
	r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  FAILED: "+msg)
}

func (r *runner) exec(toks []string, raw string) error {
	verb := toks[0]
	switch verb {
	case "cluster":
		return r.cluster(toks[1:])
	case "snapshot":
		return r.fromSnapshot(toks[1:])
	case "arbitrator", "stonith", "oneway", "pause":
		if r.c == nil {
			return fmt.Errorf("the cluster line comes first")
		}
		if verb == "oneway" || verb == "pause" || verb == "arbitrator" && len(toks) > 2 && (strings.HasSuffix(toks[2], "reachable") || toks[2] == "restart") || verb == "stonith" && r.booted {
			r.boot()
			r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  > "+raw)
		}
		_, err := r.quorumLine(verb, toks[1:])
		return err
	case "withhold", "release", "lose", "duplicate":
		if r.c == nil {
			return fmt.Errorf("the cluster line comes first")
		}
		r.boot()
		r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  > "+raw)
		_, err := r.onPathLine(verb, toks[1:])
		return err
	case "node", "service":
		if r.c == nil || r.booted {
			return fmt.Errorf("%s lines come after the cluster line, before the first command", verb)
		}
		if verb == "node" {
			return r.nodeLine(toks[1:])
		}
		return r.service(toks[1:])
	}
	if r.c == nil {
		return fmt.Errorf("the cluster line comes first")
	}
	r.boot()
	if verb != "expect" {
		r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"  > "+raw)
	}
	switch {
	case verb == "run" && len(toks) == 2:
		d, err := time.ParseDuration(toks[1])
		if err != nil || d <= 0 {
			return fmt.Errorf("run: bad duration %q", toks[1])
		}
		r.c.Run(d)
	case verb == "crash" && len(toks) == 2:
		r.check(r.c.Crash(toks[1]))
	case verb == "kill" && len(toks) == 3:
		r.check(r.c.Kill(toks[1], toks[2]))
	case verb == "partition":
		a, b, ok := strings.Cut(strings.Join(toks[1:], " "), "|")
		if !ok {
			return fmt.Errorf("partition: want A B | C D")
		}
		r.c.Partition(strings.Fields(a), strings.Fields(b))
		r.c.settle()
	case verb == "heal" && len(toks) == 1:
		r.c.Heal()
		r.c.settle()
	case verb == "fail" && (len(toks) == 4 || len(toks) == 5):
		count := -1
		if len(toks) == 5 {
			switch n, err := strconv.Atoi(toks[4]); {
			case toks[4] == "off":
				count = 0
			case err == nil && n > 0:
				count = n
			default:
				return fmt.Errorf("fail: count is a positive number or off")
			}
		}
		if toks[3] != "start" && toks[3] != "stop" && toks[3] != "restart" {
			return fmt.Errorf("fail: the action is start, stop or restart")
		}
		r.c.Fail(toks[1], toks[2], toks[3], count)
	case verb == "disk" && (len(toks) == 3 || len(toks) == 4):
		var delay time.Duration
		if len(toks) == 4 {
			d, err := time.ParseDuration(toks[3])
			if err != nil {
				return fmt.Errorf("disk: bad duration %q", toks[3])
			}
			delay = d
		}
		if err := r.c.Disk(toks[1], toks[2], delay); err != nil {
			return err
		}
		r.c.settle()
	case strings.HasSuffix(verb, ":") && len(toks) >= 3:
		return r.admin(strings.TrimSuffix(verb, ":"), toks[1:])
	case verb == "expect":
		r.expect(toks[1:], raw)
	default:
		return fmt.Errorf("unknown command %q", raw)
	}
	return nil
}

func (r *runner) check(err error) {
	if err != nil {
		r.fail("%v", err)
	}
}

func (r *runner) cluster(args []string) error {
	if r.c != nil {
		return fmt.Errorf("a second cluster line")
	}
	var names []string
	var opt Options
	qs := map[string]bool{"quorum": true, "split_action": true, "stop_budget": true}
	var qkv [][2]string
	durs := map[string]*time.Duration{
		"hb.timeout": &opt.HBTimeout, "hb.interval": &opt.HBInterval, "ready_period": &opt.ReadyPeriod,
		"maintenance_grace_period": &opt.MaintenanceGrace, "rejoin_grace_period": &opt.RejoinGrace,
		"start": &opt.StartDuration, "stop": &opt.StopDuration, "guard_lease": &opt.GuardLease,
	}
	for _, a := range args {
		k, v, kv := strings.Cut(a, "=")
		if !kv {
			names = append(names, a)
			continue
		}
		if qs[k] {
			qkv = append(qkv, [2]string{k, v})
			continue
		}
		if k == "ready_fast_ack" || k == "guard" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("cluster: %s: %v", k, err)
			}
			*map[string]*bool{"ready_fast_ack": &opt.ReadyFastAck, "guard": &opt.Guard}[k] = b
			continue
		}
		p := durs[k]
		if p == nil {
			return fmt.Errorf("cluster: unknown setting %q", k)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("cluster: %s: %v", k, err)
		}
		*p = d
	}
	opt.Record = r.record
	c, err := New(names, opt)
	r.c = c
	if err != nil {
		return err
	}
	for _, kv := range qkv {
		if _, err := c.quorumSetting(kv[0], kv[1]); err != nil {
			return fmt.Errorf("cluster: %s: %v", kv[0], err)
		}
	}
	return nil
}

// fromSnapshot builds the cluster from a snapshot file (svcmgr simulate
// --save), in place of the cluster, node and service lines.
func (r *runner) fromSnapshot(args []string) error {
	if r.c != nil {
		return fmt.Errorf("snapshot: the snapshot line replaces the cluster line and comes first")
	}
	if len(args) != 1 {
		return fmt.Errorf("snapshot: want one FILE")
	}
	path := args[0]
	if !filepath.IsAbs(path) && r.dir != "" {
		path = filepath.Join(r.dir, path)
	}
	s, err := ReadSnapshot(path)
	if err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	c, _, err := buildFromSnapshot(s)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	c.opt.Record = r.record
	r.c, r.snapshot = c, true
	return nil
}

func (r *runner) nodeLine(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("node: want a name")
	}
	n := r.c.nodes[args[0]]
	if n == nil {
		return fmt.Errorf("node: no node %q", args[0])
	}
	for _, a := range args[1:] {
		k, v, _ := strings.Cut(a, "=")
		switch {
		case k == "compat":
			c, err := strconv.Atoi(v)
			if err != nil || c <= 0 {
				return fmt.Errorf("node: bad compat %q", v)
			}
			n.compat = c
		case k == "split_action":
			if err := checkSplit(v); err != nil {
				return fmt.Errorf("node: %v", err)
			}
			if r.c.q.splitOf == nil {
				r.c.q.splitOf = map[string]string{}
			}
			r.c.q.splitOf[n.name] = v
		case k == "capacity_cpu" || k == "capacity_mem":
			if n.capacity == nil {
				n.capacity = &dataset.Capacity{}
			}
			if k == "capacity_cpu" {
				c, err := config.ParseCPU(v)
				if err != nil {
					return fmt.Errorf("node: %v", err)
				}
				n.capacity.CPUMilli = int64(c)
				continue
			}
			b, err := config.ParseSize(v)
			if err != nil {
				return fmt.Errorf("node: %v", err)
			}
			n.capacity.MemBytes = int64(b)
		case strings.HasPrefix(k, "label."):
			n.labels[strings.TrimPrefix(k, "label.")] = v
		default:
			return fmt.Errorf("node: unknown setting %q", a)
		}
	}
	return nil
}

// listKeys are the service keywords that take a list (comma-separated).
var listKeys = map[string]bool{"nodes": true, "parents": true, "children": true, "hard_affinity": true,
	"hard_anti_affinity": true, "soft_affinity": true, "soft_anti_affinity": true}

// service builds the service config through tomlfile.ParseService: the
// key=value pairs are DEFAULT keywords (start= and stop= are the sim's
// action durations).
func (r *runner) service(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("service: want a name")
	}
	var b strings.Builder
	b.WriteString("[DEFAULT]\n")
	var durs [2]time.Duration
	var res strings.Builder // the [app.main] keywords, when any
	for _, a := range args[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("service: want key=value, got %q", a)
		}
		switch {
		case k == "start" || k == "stop":
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("service: %s: %v", k, err)
			}
			durs[map[string]int{"start": 0, "stop": 1}[k]] = d
		case listKeys[k]:
			var q []string
			for _, x := range strings.Split(v, ",") {
				q = append(q, strconv.Quote(x))
			}
			fmt.Fprintf(&b, "%s = [%s]\n", k, strings.Join(q, ", "))
		case k == "priority" || k == "flex_target" && v != "all" || k == "flex_min" || k == "flex_max" || k == "update_parallelism":
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		case k == "monitor" || k == "restart":
			fmt.Fprintf(&res, "%s = %s\n", k, v)
		case k == "restart_delay" || k == "restart_delay_max" || k == "restart_window":
			fmt.Fprintf(&res, "%s = %s\n", k, strconv.Quote(v))
		default:
			fmt.Fprintf(&b, "%s = %s\n", k, strconv.Quote(v))
		}
	}
	if res.Len() > 0 {
		b.WriteString("[app.main]\nstart = \"true\"\n" + res.String())
	}
	cfg, err := tomlfile.ParseService(args[0]+".toml", args[0], []byte(b.String()))
	if err != nil {
		return err
	}
	return r.c.AddService(cfg, durs[0], durs[1])
}

// admin runs "NODE: nodemgr ..." and "NODE: svcmgr -s SVC ACTION [flags]".
func (r *runner) admin(node string, args []string) error {
	switch args[0] {
	case "nodemgr":
		if len(args) >= 3 && args[1] == "daemon" {
			compat := 0
			for _, a := range args[3:] {
				v, ok := strings.CutPrefix(a, "compat=")
				n, err := strconv.Atoi(v)
				if !ok || err != nil || n <= 0 {
					return fmt.Errorf("nodemgr daemon: unknown argument %q", a)
				}
				compat = n
			}
			switch args[2] {
			case "start":
				r.check(r.c.Start(node, compat))
			case "stop", "shutdown", "restart":
				r.check(r.c.Stop(node, args[2], compat))
			default:
				return fmt.Errorf("nodemgr daemon: start | stop | shutdown | restart")
			}
			return nil
		}
		if len(args) != 2 {
			return errors.New("want nodemgr freeze, thaw or daemon start|stop|shutdown|restart")
		}
		r.answer(r.c.Admin(node, "", args[1], "", false))
	case "svcmgr":
		var svc, action, arg string
		var kws []string
		var timeout time.Duration
		local, wait, force := false, false, false
		for i := 1; i < len(args); i++ {
			switch a := args[i]; {
			case a == "--kw" && i+1 < len(args):
				kws = append(kws, args[i+1])
				i++
			case (a == "-s" || a == "--to" || a == "--node") && i+1 < len(args):
				if a == "-s" {
					svc = args[i+1]
				} else {
					arg = args[i+1]
				}
				i++
			case a == "--local":
				local = true
			case a == "--wait":
				wait = true
			case a == "--time" && i+1 < len(args):
				d, err := time.ParseDuration(args[i+1])
				if err != nil || d <= 0 {
					return fmt.Errorf("svcmgr: --time: bad duration %q", args[i+1])
				}
				timeout = d
				i++
			case a == "--force":
				force = true
			case action == "" && !strings.HasPrefix(a, "-"):
				action = a
			default:
				return fmt.Errorf("svcmgr: unexpected %q", a)
			}
		}
		if svc == "" || action == "" {
			return fmt.Errorf("svcmgr: want -s SVC ACTION")
		}
		if action == "set" || action == "unset" {
			if len(kws) == 0 || local || wait {
				return fmt.Errorf("svcmgr: want -s SVC %s and one --kw K[=V] or more", action)
			}
			r.answer(r.c.Keyword(node, svc, action, kws))
			return nil
		}
		if force {
			if action != "start" || !local || wait {
				return fmt.Errorf("svcmgr: --force goes with start --local")
			}
			r.answer(r.c.AdminForce(node, svc))
			return nil
		}
		if timeout > 0 && !wait {
			return fmt.Errorf("svcmgr: --time goes with --wait")
		}
		if wait {
			r.answer(r.c.AdminWaitFor(node, svc, action, arg, timeout))
			return nil
		}
		r.answer(r.c.Admin(node, svc, action, arg, local))
	default:
		return errors.New("want NODE: nodemgr ARGS or NODE: svcmgr ARGS")
	}
	return nil
}

func (r *runner) answer(res string, err error) {
	if err != nil {
		r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"    error: "+err.Error())
		return
	}
	r.c.lines = append(r.c.lines, fmtTime(r.c.Now())+"    "+res)
}

// tokenize splits a line into words; double quotes group words ("start
// failed", placement="load avg"); # starts a comment.
func tokenize(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, has := false, false
	for _, ch := range line {
		switch {
		case ch == '"':
			in, has = !in, true
		case in:
			cur.WriteRune(ch)
		case ch == '#':
			goto end
		case ch == ' ' || ch == '\t' || ch == '\r':
			if has {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(ch)
			has = true
		}
	}
end:
	if in {
		return nil, fmt.Errorf("unterminated quote")
	}
	if has {
		out = append(out, cur.String())
	}
	return out, nil
}
