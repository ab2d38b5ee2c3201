package node_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/dataset/status"
	"haven/node"
	"haven/node/datadriven"
	"haven/quorum"
)

var update = flag.Bool("update", false, "rewrite node/testdata/*.txt with the outputs (review the diff)")

// TestDatadriven runs the files of testdata/ (package datadriven): each
// command is one input of a node core, handed to Step as a driver does,
// then the whole Ready it produced (see
// harness.step for the commands). go test ./node -run TestDatadriven
// -update rewrites the expected outputs.
func TestDatadriven(t *testing.T) {
	datadriven.RunDir(t, "testdata/*.txt", *update, func(t *testing.T) func(*datadriven.Cmd) (string, error) {
		h := &harness{t: t, now: ddT0, cfgs: map[string]*config.ServiceConfig{}, checks: map[string]node.Check{},
			running: map[string]string{}, gens: map[string]uint64{}, probes: map[string]time.Time{}}
		return h.step
	})
}

// ddT0 is the fake clock's start; times print as offsets from it.
var ddT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness is a driver of one node core whose state writes happen off its
// loop (unless write-through): the state of a Persist is written when a
// command says so (persist-done), or fails (persist-fail).
type harness struct {
	t    *testing.T
	c    *node.Core
	name string
	now  time.Time
	cfgs map[string]*config.ServiceConfig // the installed configs (Local)
	// checks are the status checks ordered and not answered, by service.
	checks map[string]node.Check
	// running are the actions run and not ended, by service.
	running map[string]string
	gens    map[string]uint64 // the peers' data generations
	// writing is the seq of the state being written (0: none), pending
	// that state; disk what the file holds.
	writing uint64
	pending node.State
	disk    node.State
	through bool
	// probes are the send times of the last probe or report ordered to
	// each arbitrator (the answers of arbitrator and onevote answer it).
	probes map[string]time.Time
	// published: a Ready asked to publish the dataset since the cluster
	// environment last sent it; changed: since its last decision pass (the
	// node's own dataset changed: the next pass is a full one, as the
	// driver's); wakeAt the wake-up asked (cluster_test.go)
	published, changed bool
	wakeAt             time.Time
}

// LocalInfo and LocalServices are the driver's part of the view (Local).
func (h *harness) LocalInfo() dataset.Node {
	return dataset.Node{Name: h.name, Compat: 1}
}
func (h *harness) LocalServices() map[string]*config.ServiceConfig { return h.cfgs }

// step maps a command of a test file to the core's inputs, then prints
// the Ready they produced (the whole of it). The commands:
//
//	new NAME members=N1,N2 [write-through] [ready=D] [rejoin=D]
//	    [quorum=SPLIT_ACTION] [arb=A] [onevote=A] [stonith=N1,N2] [conf=A]
//	    [diskfence] [guard=LEASE]
//	                       cluster.quorum on with that split_action, a
//	                       plain arbitrator A, a one-vote arbitrator A
//	                       (weight 1 each; beat 0.5s, arbitrator timeout
//	                       1s, hb.timeout 3s); conf: the node's configuration
//	                       digest, A its arbitrators' part (testConf);
//	                       diskfence: [hb.disk] fence = true; guard: node.guard
//	                       on with that lease (act 2.5s)
//	service SVC            (the input lines: the service's TOML config)
//	start                  the daemon's start
//	peer N up|down         a heartbeat event about N
//	peer N stale|fresh     N's beats come without its data, or again with it
//	peer N unseen [X,Y]    N's beats list X,Y as not heard (none: empty)
//	peer N data            N's data; input lines "node [monitor=M] [frozen]
//	                       [split_frozen] [split_action=A] [conf=A]",
//	                       "SVC [avail=S] [state=S] [frozen] [expect=LE]
//	                       [token=T] [res=RID:S,RID:S]" (res sets avail) and
//	                       "target SVC EXPECT id=ID counter=C [node=N]
//	                       [origin=N]" (origin: the node that set it; the
//	                       peer by default)
//	arbitrator A ok|fail   plain arbitrator A answers the last probe
//	onevote A granted [exclusive] [winner=N1,N2] | refused [winner=..] | silent
//	                       one-vote arbitrator A answers the last report
//	                       (silent: no answer within its timeout)
//	quorum                 the quorum state (svcmon's part, QuorumInfo)
//	guard [armed] [fired=SVC,..] [not-renewed=WHY]   the guard's answer
//	                       (GuardReported; WHY's "_" read as spaces)
//	advance D              the fake clock moves on by D
//	tick [D]               advance D, then the periodic tick
//	orchestrate [view]     the decision pass (view: only the view changed)
//	wake                   the driver's timer of Ready.WakeAt
//	admin SVC ACTION [to=N] [wait] [deadline=D]    an admin target
//	local SVC ACTION       an admin action --local
//	node-admin ACTION      an admin action on the node (freeze, thaw...)
//	check SVC STATUS       the status check ordered for SVC ends (every
//	                       resource STATUS; or RID=STATUS words, one each)
//	action-done SVC KIND [fail=TEXT]   an action ordered ends
//	persist-done           the state write in flight ends well
//	persist-fail TEXT      it fails
//	retry-persist          the driver's tick while writes fail
//	disk lost|ok           what the driver read of the fencing disk
//	state                  the core's durable state and the file's
//
// Each command is an input of Step, as a driver hands it.
func (h *harness) step(d *datadriven.Cmd) (string, error) {
	var pre string
	switch d.Name {
	case "new":
		return h.newCore(d)
	case "state":
		return "memory: " + stateText(*h.c.State()) + "\ndisk:   " + stateText(h.disk) +
			fmt.Sprintf("\nsettled=%v seq=%d", h.c.Settled(), h.c.PersistSeq()), nil
	case "service":
		if len(d.Args) != 1 {
			return "", d.Errorf("want a service name")
		}
		cfg, err := tomlfile.ParseService(d.Args[0]+".toml", d.Args[0], []byte(strings.Join(d.Input, "\n")+"\n"))
		if err != nil {
			return "", err
		}
		h.cfgs[cfg.Name] = cfg
		local := cfg.HasNode(h.name, h.c.PeerNames())
		h.c.Step(node.InstanceInstalled{Service: cfg.Name, Spec: node.InstanceSpec{Local: local, Runnable: local, Resources: node.LadderSpecs(cfg),
			MonitorAction: cfg.MonitorAction}, Now: h.now})
		if local {
			h.c.Step(node.CheckOrdered{Service: cfg.Name})
		}
	case "start":
		h.c.Step(node.Started{Now: h.now})
	case "peer":
		ev, err := h.peerEvent(d)
		if err != nil {
			return "", err
		}
		h.c.Step(node.PeerNews{Event: ev, Now: h.now})
	case "advance", "tick":
		if len(d.Args) > 0 {
			dur, err := time.ParseDuration(d.Args[0])
			if err != nil {
				return "", d.Errorf("%v", err)
			}
			h.now = h.now.Add(dur)
		}
		if d.Name == "advance" {
			return "now " + h.at(h.now), nil
		}
		h.c.Step(node.Ticked{Now: h.now})
	case "orchestrate":
		_, view := d.Arg("view")
		h.c.Step(node.Pass{Now: h.now, ViewOnly: view})
	case "wake":
		h.c.Step(node.Woken{})
	case "admin":
		if len(d.Args) < 2 {
			return "", d.Errorf("want a service and an action")
		}
		req := node.TargetRequest{Service: d.Args[0], Action: d.Args[1], Now: h.now}
		if cfg := h.cfgs[req.Service]; cfg != nil {
			req.Nodes = cfg.NodeList(append([]string{h.name}, h.c.PeerNames()...))
		}
		req.Node, _ = d.Arg("to")
		_, req.Wait = d.Arg("wait")
		if v, ok := d.Arg("deadline"); ok {
			dur, err := time.ParseDuration(v)
			if err != nil {
				return "", d.Errorf("%v", err)
			}
			req.Deadline = h.now.Add(dur)
		}
		pre = fmt.Sprintf("ticket %d\n", h.c.Step(req))
	case "local":
		if len(d.Args) != 2 {
			return "", d.Errorf("want a service and an action")
		}
		pre = fmt.Sprintf("ticket %d\n", h.c.Step(node.LocalRequest{Service: d.Args[0], Action: d.Args[1], Now: h.now}))
	case "node-admin":
		if len(d.Args) != 1 {
			return "", d.Errorf("want an action")
		}
		pre = fmt.Sprintf("ticket %d\n", h.c.Step(node.NodeAdmin{Action: d.Args[0], Now: h.now}))
	case "check":
		if len(d.Args) < 2 {
			return "", d.Errorf("want a service and a status, or RID=STATUS words")
		}
		ck, ok := h.checks[d.Args[0]]
		if !ok {
			return "", d.Errorf("no check of %s ordered", d.Args[0])
		}
		delete(h.checks, d.Args[0])
		res := map[string]dataset.Resource{}
		if strings.Contains(d.Args[1], "=") {
			var err error
			if res, err = resourceStatuses(d.Args[1:]); err != nil {
				return "", d.Errorf("%v", err)
			}
		} else {
			for _, r := range h.cfgs[d.Args[0]].Resources {
				res[r.RID] = dataset.Resource{Status: dataset.Status(d.Args[1])}
			}
		}
		h.c.Step(node.Checked{Check: ck, Resources: res, Now: h.now})
	case "action-done":
		if len(d.Args) < 2 {
			return "", d.Errorf("want a service and a kind")
		}
		if h.running[d.Args[0]] != d.Args[1] {
			return "", d.Errorf("no %s of %s running", d.Args[1], d.Args[0])
		}
		delete(h.running, d.Args[0])
		var err error
		if v, ok := d.Arg("fail"); ok {
			err = errors.New(v)
		}
		h.c.Step(node.Acted{Service: d.Args[0], Kind: d.Args[1], Err: err, Now: h.now})
	case "persist-done", "persist-fail":
		if h.writing == 0 {
			return "", d.Errorf("no state write in flight")
		}
		seq := h.writing
		h.writing = 0
		if d.Name == "persist-fail" {
			h.c.Step(node.Persisted{Seq: seq, Err: errors.New(strings.Join(d.Args, " ")), Now: h.now})
			break
		}
		h.disk = h.pending
		h.c.Step(node.Persisted{Seq: seq, Now: h.now})
	case "retry-persist":
		h.c.Step(node.RetryWrite{})
	case "disk":
		if len(d.Args) != 1 || d.Args[0] != "lost" && d.Args[0] != "ok" {
			return "", d.Errorf("want lost or ok")
		}
		h.c.Step(node.DiskRead{Lost: d.Args[0] == "lost", Now: h.now})
	case "arbitrator":
		if len(d.Args) != 2 || d.Args[1] != "ok" && d.Args[1] != "fail" {
			return "", d.Errorf("want an arbitrator and ok or fail")
		}
		sent, ok := h.probes[d.Args[0]]
		if !ok {
			return "", d.Errorf("no probe of %s ordered", d.Args[0])
		}
		h.c.Step(node.Voted{Arbitrator: d.Args[0], OK: d.Args[1] == "ok", Detail: "answer " + d.Args[1], Sent: sent, Now: h.now})
	case "onevote":
		if len(d.Args) < 2 {
			return "", d.Errorf("want an arbitrator and granted, refused or silent")
		}
		sent, ok := h.probes[d.Args[0]]
		if !ok {
			return "", d.Errorf("no report to %s ordered", d.Args[0])
		}
		g := quorum.GrantAnswer{Lease: quorum.DefaultLease}
		if w, ok := d.Arg("winner"); ok {
			g.Winner = strings.Split(w, ",")
		}
		errText := ""
		switch d.Args[1] {
		case "granted":
			_, g.Exclusive = d.Arg("exclusive")
			g.Granted, g.Reason = true, "granted"
			if g.Exclusive {
				g.Reason = "granted, exclusive"
			}
		case "refused":
			g.Reason = "another partition holds the vote"
		case "silent":
			errText = "no answer within 1s"
		default:
			return "", d.Errorf("want granted, refused or silent")
		}
		h.c.Step(node.Granted{Arbitrator: d.Args[0], Grant: g, ErrText: errText, Sent: sent, Now: h.now})
	case "quorum":
		return quorumText(h.c.QuorumInfo(h.now), h.c.State()), nil
	case "guard":
		in := node.GuardReported{Now: h.now}
		_, in.Armed = d.Arg("armed")
		if v, ok := d.Arg("fired"); ok {
			in.Fired = &node.GuardFiring{ID: "r-" + h.at(h.now), At: h.now, Services: strings.Split(v, ",")}
		}
		if v, ok := d.Arg("not-renewed"); ok {
			in.NotRenewed = strings.ReplaceAll(v, "_", " ")
		}
		h.c.Step(in)
	default:
		return "", d.Errorf("unknown command")
	}
	out := h.ready()
	h.checkDurable(d)
	return pre + out, nil
}

// checkDurable checks, after each command, that the core is not ahead of
// the disk: once every state handed out is known to be written (Settled),
// the core's durable state is what the file holds.
func (h *harness) checkDurable(d *datadriven.Cmd) {
	if !h.c.Settled() || h.writing != 0 {
		return
	}
	st := h.c.State().Clone()
	if st.Lamport > h.disk.Lamport {
		// a roll back keeps the Lamport clock (Restore: versions handed
		// out stay unique); the next write carries it
		st.Lamport = h.disk.Lamport
	}
	mem, _ := json.Marshal(st)
	disk, _ := json.Marshal(h.disk)
	if string(mem) != string(disk) {
		h.t.Errorf("%s: %s: settled, yet the core's state is not what the file holds:\nmemory %s\ndisk   %s", d.Pos, d.Name, mem, disk)
	}
}

func (h *harness) newCore(d *datadriven.Cmd) (string, error) {
	if len(d.Args) == 0 {
		return "", d.Errorf("want the node's name")
	}
	h.name = d.Args[0]
	cfg := node.Config{Name: h.name, ClusterNodes: []string{h.name}, Compat: 1, Local: h,
		MaintenanceGrace: time.Minute, RejoinGrace: 10 * time.Second, ReadyPeriod: 2 * time.Second,
		CheckInterval: time.Hour, MonitorInterval: time.Hour}
	if v, ok := d.Arg("members"); ok {
		cfg.ClusterNodes = strings.Split(v, ",")
	}
	if v, ok := d.Arg("conf"); ok {
		cfg.ClusterConf, cfg.ClusterFile = testConf(v), "/etc/haven/cluster.toml"
	}
	_, h.through = d.Arg("write-through")
	cfg.WriteThrough = h.through
	for key, p := range map[string]*time.Duration{"ready": &cfg.ReadyPeriod, "rejoin": &cfg.RejoinGrace} {
		if v, ok := d.Arg(key); ok {
			dur, err := time.ParseDuration(v)
			if err != nil {
				return "", d.Errorf("%s: %v", key, err)
			}
			*p = dur
		}
	}
	if v, ok := d.Arg("quorum"); ok {
		cfg.Quorum = node.QuorumConfig{Enabled: true, SplitAction: v, HBTimeout: 3 * time.Second,
			Timing: quorum.Timing{Beat: 500 * time.Millisecond, ArbitratorTimeout: time.Second}}
		for key, one := range map[string]bool{"arb": false, "onevote": true} {
			if a, ok := d.Arg(key); ok {
				cfg.Quorum.Arbitrators = append(cfg.Quorum.Arbitrators, quorum.Arbitrator{Name: a, Weight: 1, OneVote: one})
			}
		}
		slices.SortFunc(cfg.Quorum.Arbitrators, func(a, b quorum.Arbitrator) int { return strings.Compare(a.Name, b.Name) })
		if v, ok := d.Arg("stonith"); ok {
			cfg.Quorum.Stonith = strings.Split(v, ",")
		}
		_, cfg.Quorum.DiskFence = d.Arg("diskfence")
	}
	if v, ok := d.Arg("guard"); ok {
		lease, err := time.ParseDuration(v)
		if err != nil {
			return "", d.Errorf("guard: %v", err)
		}
		cfg.Guard = node.GuardConfig{Enabled: true, Lease: lease, Act: 2500 * time.Millisecond}
	}
	h.c = node.New(cfg, node.State{})
	h.disk = h.c.State().Clone()
	return h.ready(), nil
}

// quorumText is the quorum state on a few lines: the votes now, whether
// this node lost a vote, its freezes, each arbitrator, the last vote and
// the takeover gates.
func quorumText(qi *dataset.QuorumInfo, st *node.State) string {
	if qi == nil {
		return "quorum off"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "votes %d/%d (live %s) lost=%v pending=%v", qi.Votes, qi.Total, strings.Join(qi.Live, ","), qi.Lost, qi.Pending)
	if st.NodeFrozen {
		b.WriteString(" frozen")
	}
	if st.SplitFrozen {
		b.WriteString(" split-frozen")
	}
	b.WriteString("\n")
	for _, a := range qi.Arbitrators {
		fmt.Fprintf(&b, "arbitrator %s answered=%v", a.Name, a.Answered)
		if a.OneVote {
			fmt.Fprintf(&b, " exclusive=%v winner=%s", a.Exclusive, strings.Join(a.Winner, ","))
			if a.Silent {
				b.WriteString(" silent")
			}
		}
		fmt.Fprintf(&b, " (%s)\n", a.Detail)
	}
	if qi.LastVote != "" {
		fmt.Fprintf(&b, "last vote: %s\n", qi.LastVote)
	}
	for _, g := range qi.Gates {
		if g.Blocked != "" {
			fmt.Fprintf(&b, "gate %s blocked: %s\n", g.Node, g.Blocked)
		} else {
			fmt.Fprintf(&b, "gate %s open (fenced=%v)\n", g.Node, g.Fenced)
		}
	}
	return b.String()
}

// testConf is a configuration digest whose arbitrators' part is arb.
func testConf(arb string) *dataset.ClusterConf {
	return &dataset.ClusterConf{Members: "m", Quorum: "q", Arbitrators: arb, Stonith: "s", DiskFence: "d"}
}

// peerEvent is the heartbeat event of a "peer" command.
func (h *harness) peerEvent(d *datadriven.Cmd) (node.PeerEvent, error) {
	if len(d.Args) < 2 || len(d.Args) > 3 || len(d.Args) == 3 && d.Args[1] != "unseen" {
		return node.PeerEvent{}, d.Errorf("want a node and up, down, stale, fresh, unseen [LIST] or data")
	}
	ev := node.PeerEvent{Node: d.Args[0]}
	if len(d.Args) == 3 {
		ev.Unseen = strings.Split(d.Args[2], ",")
	}
	switch d.Args[1] {
	case "up":
		ev.Kind = node.PeerUp
	case "down":
		ev.Kind = node.PeerDown
	case "stale":
		ev.Kind = node.PeerStale
	case "fresh":
		ev.Kind = node.PeerFresh
	case "unseen":
		ev.Kind = node.PeerUnseen
		if len(d.Input) > 0 {
			return ev, d.Errorf("unseen takes its list as an argument")
		}
	case "data":
		ev.Kind = node.PeerData
		h.gens[ev.Node]++
		n := &dataset.Node{Name: ev.Node, Monitor: dataset.NodeIdle, Compat: 1, Gen: h.gens[ev.Node], Services: map[string]dataset.Instance{}}
		for _, l := range d.Input {
			f := strings.Fields(l)
			kv := map[string]string{}
			for _, w := range f[1:] {
				k, v, _ := strings.Cut(w, "=")
				kv[k] = v
			}
			_, frozen := kv["frozen"]
			if f[0] == "node" {
				if m := kv["monitor"]; m != "" {
					n.Monitor = dataset.NodeMonitor(m)
				}
				n.Frozen = frozen
				_, n.SplitFrozen = kv["split_frozen"]
				n.SplitAction = kv["split_action"]
				if v, ok := kv["conf"]; ok {
					n.Conf = testConf(v)
				}
				if v, ok := kv["guard"]; ok {
					// guard=LEASE_MS,ACT_MS[,HB_TIMEOUT_MS] [anchored]
					var ms []int64
					for _, x := range strings.Split(v, ",") {
						i, err := strconv.ParseInt(x, 10, 64)
						if err != nil {
							return ev, d.Errorf("guard: %v", err)
						}
						ms = append(ms, i)
					}
					if len(ms) < 2 {
						return ev, d.Errorf("guard: want LEASE_MS,ACT_MS[,HB_TIMEOUT_MS]")
					}
					n.Guard = &dataset.GuardInfo{LeaseMs: ms[0], ActMs: ms[1]}
					if len(ms) > 2 {
						n.Guard.HBTimeoutMs = ms[2]
					}
					_, n.Guard.Anchored = kv["anchored"]
				}
				continue
			}
			if f[0] == "target" {
				t, err := peerTarget(ev.Node, f[1:], kv)
				if err != nil {
					return ev, d.Errorf("%v", err)
				}
				if n.Targets == nil {
					n.Targets = map[string]dataset.Target{}
				}
				n.Targets[f[1]] = t
				continue
			}
			inst := dataset.Instance{Avail: dataset.StatusDown, Overall: dataset.StatusDown, Frozen: frozen,
				Monitor: dataset.InstanceMonitor{State: dataset.Idle, GlobalExpect: dataset.ExpectNone, LocalExpect: dataset.ExpectNone}}
			if a := kv["avail"]; a != "" {
				inst.Avail, inst.Overall = dataset.Status(a), dataset.Status(a)
			}
			if s := kv["state"]; s != "" {
				inst.Monitor.State = dataset.MonitorState(strings.ReplaceAll(s, "_", " "))
			}
			if e := kv["expect"]; e != "" {
				inst.Monitor.LocalExpect = e
			}
			if v := kv["token"]; v != "" {
				tok, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return ev, d.Errorf("token: %v", err)
				}
				inst.FencingToken = tok
			}
			if v := kv["res"]; v != "" {
				res, err := resourceStatuses(strings.Split(v, ","))
				if err != nil {
					return ev, d.Errorf("%v", err)
				}
				inst.Resources = res
				inst.Avail, inst.Overall = status.Instance(res)
			}
			n.Services[f[0]] = inst
		}
		ev.Data = n
	default:
		return ev, d.Errorf("want up, down, stale, fresh, unseen or data, got %q", d.Args[1])
	}
	return ev, nil
}

// peerTarget is the target of a "target SVC EXPECT id=ID counter=C
// [node=N] [origin=N]" line of peer's data (set by origin, else by peer).
func peerTarget(peer string, words []string, kv map[string]string) (dataset.Target, error) {
	origin := peer
	if o := kv["origin"]; o != "" {
		origin = o
	}
	if len(words) < 2 {
		return dataset.Target{}, fmt.Errorf("target: want SVC EXPECT id=ID counter=C")
	}
	cnt, err := strconv.ParseUint(kv["counter"], 10, 64)
	if err != nil {
		return dataset.Target{}, fmt.Errorf("target: counter: %v", err)
	}
	return dataset.Target{Expect: words[1], Node: kv["node"], ID: kv["id"],
		Version: dataset.Version{Counter: cnt, Origin: origin}}, nil
}

// resourceStatuses reads RID=STATUS (or RID:STATUS) words.
func resourceStatuses(words []string) (map[string]dataset.Resource, error) {
	res := map[string]dataset.Resource{}
	for _, w := range words {
		rid, st, ok := strings.Cut(w, "=")
		if !ok {
			rid, st, ok = strings.Cut(w, ":")
		}
		if !ok || rid == "" || st == "" {
			return nil, fmt.Errorf("%q: want RID=STATUS", w)
		}
		res[rid] = dataset.Resource{Status: dataset.Status(st)}
	}
	return res, nil
}

// ready takes the core's Ready, carries out what the test driver does
// itself (a Persist starts a write, or is written at once when
// write-through; checks are remembered), and prints the whole of it.
func (h *harness) ready() string {
	rd := h.c.Ready()
	var b strings.Builder
	switch {
	case rd.Persist != nil:
		fmt.Fprintf(&b, "persist #%d: %s\n", rd.PersistSeq, stateText(*rd.Persist))
		if h.through {
			h.disk = rd.Persist.Clone()
		} else {
			h.writing, h.pending = rd.PersistSeq, rd.Persist.Clone()
		}
	case rd.PersistSeq != 0:
		fmt.Fprintf(&b, "persist #%d: after the write in flight\n", rd.PersistSeq)
	}
	if rd.Publish {
		b.WriteString("publish\n")
		h.published, h.changed = true, true
	}
	for _, e := range rd.Events {
		svc := e.Service()
		if svc != "" {
			svc = " " + svc
		}
		fmt.Fprintf(&b, "event %s%s: %s\n", e.Kind(), svc, e.String())
	}
	for _, a := range rd.Answers {
		fmt.Fprintf(&b, "answer %d:", a.Ticket)
		if a.ID != "" {
			b.WriteString(" id=" + a.ID)
		}
		if a.Result != "" {
			b.WriteString(" " + a.Result)
		}
		if a.Err != nil {
			fmt.Fprintf(&b, " error (bad=%v): %v", a.Bad, a.Err)
		}
		if a.ID == "" && a.Result == "" && a.Err == nil {
			b.WriteString(" ok")
		}
		b.WriteString("\n")
	}
	for _, a := range rd.Ordered {
		fmt.Fprintf(&b, "ordered %s %s (held for the write)\n", a.Kind, a.Service)
	}
	for _, a := range rd.Run {
		h.running[a.Service] = a.Kind
		fmt.Fprintf(&b, "run %s %s token=%d: %s\n", a.Kind, a.Service, a.FencingToken, a.Reason)
	}
	for _, a := range rd.NodeActions {
		fmt.Fprintf(&b, "node-action %s: %s\n", a.Kind, a.Reason)
	}
	for _, ck := range rd.Check {
		h.checks[ck.Service] = ck
		fmt.Fprintf(&b, "check %s full=%v\n", ck.Service, ck.Full)
	}
	for _, p := range rd.Probes {
		h.probes[p.Name] = p.Sent
		if p.Partition != nil {
			fmt.Fprintf(&b, "report %s: partition %s running=%d\n", p.Name, strings.Join(p.Partition, ","), p.Running)
			continue
		}
		fmt.Fprintf(&b, "probe %s\n", p.Name)
	}
	for _, f := range rd.Fences {
		fmt.Fprintf(&b, "fence %s: %s\n", f.Node, f.Reason)
	}
	for _, svc := range rd.Announce {
		fmt.Fprintf(&b, "announce %s\n", svc)
	}
	for _, op := range rd.Configs {
		fmt.Fprintf(&b, "config %s: %s\n", op.Service, op.What)
	}
	if !rd.WakeAt.IsZero() {
		fmt.Fprintf(&b, "wake-at %s\n", h.at(rd.WakeAt))
		if h.wakeAt.IsZero() || rd.WakeAt.Before(h.wakeAt) {
			h.wakeAt = rd.WakeAt
		}
	}
	if b.Len() == 0 {
		return "(empty ready)"
	}
	return b.String()
}

// at prints t as an offset from the fake clock's start.
func (h *harness) at(t time.Time) string { return "+" + t.Sub(ddT0).String() }

// stateText is a node's durable state on one line: what differs from
// a zero state.
func stateText(st node.State) string {
	var parts []string
	if st.NodeFrozen {
		parts = append(parts, "node frozen")
	}
	if st.SplitFrozen {
		parts = append(parts, "split frozen")
	}
	for _, svc := range slices.Sorted(maps.Keys(st.Services)) {
		ss := st.Services[svc]
		var f []string
		if ss.Frozen {
			f = append(f, "frozen")
		}
		if ss.LocalExpect != "" {
			f = append(f, "local_expect="+ss.LocalExpect)
		}
		if ss.Target.Expect != "" {
			f = append(f, "target="+ss.Target.String())
		}
		if ss.StartFailed {
			f = append(f, "start_failed")
		}
		if ss.FencingToken != 0 {
			f = append(f, fmt.Sprintf("token=%d", ss.FencingToken))
		}
		if ss.GaveUp != "" {
			f = append(f, "gave_up")
		}
		parts = append(parts, svc+"{"+strings.Join(f, " ")+"}")
	}
	parts = append(parts, fmt.Sprintf("lamport=%d", st.Lamport))
	return strings.Join(parts, " ")
}
