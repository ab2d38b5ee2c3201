package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
	"haven/quorum"
)

var faultSpec = instsm.Spec{Local: true, Runnable: true, Monitored: true, MonitorAction: MonitorActionNone,
	Resources: []instsm.ResourceSpec{{RID: "ocf#vip", Monitor: true, Restart: 1, RestartDelay: time.Second}, {RID: "ocf#app", Monitor: true}}}

// faultCheck ends the check the core ordered (one is ordered when none is
// pending) with ocf#vip up and ocf#app as given.
func faultCheck(t *testing.T, c *Core, fc *clock.Fake, app dataset.Resource) Ready {
	t.Helper()
	ck := orderedCheck(t, c)
	app.Monitor = true
	c.checkDone(ck, map[string]dataset.Resource{"ocf#vip": {Status: dataset.StatusUp, Monitor: true}, "ocf#app": app}, fc.Now())
	return c.Ready()
}

// faultCore is a core whose instance of web runs here (started) when
// started, or is known here only (a passive node).
func faultCore(t *testing.T, fc *clock.Fake, started bool) *Core {
	t.Helper()
	c := New(Config{Name: "n1", MonitorInterval: 5 * time.Second, CheckInterval: time.Minute, WriteThrough: true}, State{})
	c.addInstance("web", faultSpec, fc.Now())
	if started {
		if _, err := c.runAction("web", "start", "test", fc.Now()); err != nil {
			t.Fatal(err)
		}
		c.Ready()
		c.actionDone("web", "start", nil, fc.Now())
	} else {
		c.checkNow("web")
	}
	faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusUp})
	return c
}

func faultEvent(rd Ready, sev string) *ResourceFault {
	for _, e := range rd.Events {
		if f, ok := e.(ResourceFault); ok && f.Severity == sev {
			return &f
		}
	}
	return nil
}

// A hard fault (exit 5 from the monitor, or the agent not installed)
// where the instance runs: an error event, the node out of the
// candidates (Excluded, like a monitor_action switch), the instance
// stopped so that the next node takes it. Once the check finds the
// resource fine again, the exclusion ends by itself.
func TestHardFaultExcludesTheNodeAndStopsTheInstance(t *testing.T) {
	fc := clock.NewFake(t0)
	c := faultCore(t, fc, true)
	fc.Advance(5 * time.Second)
	rd := faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown, Fault: FaultHard,
		Log: "monitor: exit 5 (OCF_ERR_INSTALLED: not installed): this node cannot run it"})
	if f := faultEvent(rd, FaultHard); f == nil || f.RID != "ocf#app" || !strings.Contains(f.Reason, "OCF_ERR_INSTALLED") {
		t.Fatalf("events %v, want a hard fault of ocf#app", rd.Events)
	}
	ex := c.Dataset(dataset.Node{}).Services["web"].Excluded
	if !strings.HasPrefix(ex, "ocf#app cannot run here: monitor: exit 5") {
		t.Fatalf("excluded %q", ex)
	}
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" {
		t.Fatalf("runs %+v, want the stop of the instance", rd.Run)
	}
	if info, _ := c.Instance("web"); info.Monitor.State != dataset.Tocing || info.Monitor.LocalExpect != dataset.ExpectNone {
		t.Fatalf("monitor %+v, want tocing and no expectation to run here", info.Monitor)
	}
	c.actionDone("web", "stop", nil, fc.Now())
	faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown, Fault: FaultHard, Log: "still"})
	if ex := c.Dataset(dataset.Node{}).Services["web"].Excluded; ex == "" {
		t.Fatal("the exclusion ended while the fault lasts")
	}
	// the agent installed: the node is a candidate again
	faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown})
	if ex := c.Dataset(dataset.Node{}).Services["web"].Excluded; ex != "" {
		t.Fatalf("excluded %q after the fault ended", ex)
	}
}

// A hard fault on a node where the instance does not run: out of the
// candidates, nothing stopped; the event is said once.
func TestHardFaultOnAPassiveNode(t *testing.T) {
	fc := clock.NewFake(t0)
	c := faultCore(t, fc, false)
	bad := dataset.Resource{Status: dataset.StatusDown, Fault: FaultHard, Log: "cannot run here: agent ocf:heartbeat:X is not installed on this node"}
	rd := faultCheck(t, c, fc, bad)
	if faultEvent(rd, FaultHard) == nil || len(rd.Run) != 0 {
		t.Fatalf("events %v runs %v, want the fault said and nothing run", rd.Events, rd.Run)
	}
	if ex := c.Dataset(dataset.Node{}).Services["web"].Excluded; !strings.Contains(ex, "not installed") {
		t.Fatalf("excluded %q", ex)
	}
	fc.Advance(time.Minute)
	if rd := faultCheck(t, c, fc, bad); faultEvent(rd, FaultHard) != nil {
		t.Fatal("the same fault said again at each check")
	}
	// an optional resource has no say
	opt := bad
	opt.Optional = true
	faultCheck(t, c, fc, opt)
	if ex := c.Dataset(dataset.Node{}).Services["web"].Excluded; ex != "" {
		t.Fatalf("excluded %q by an optional resource", ex)
	}
}

// A fatal fault (exit 6): the service stopped everywhere and frozen (the
// target stopped), said at error level; not set again while it stands.
func TestFatalFaultStopsAndFreezesTheService(t *testing.T) {
	fc := clock.NewFake(t0)
	c := faultCore(t, fc, true)
	rd := faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown, Fault: FaultFatal,
		Log: "monitor: exit 6 (OCF_ERR_CONFIGURED: not configured): state file is not writable"})
	f := faultEvent(rd, FaultFatal)
	if f == nil || f.Level() != Error || !strings.Contains(f.Reason, "stopped on every node and frozen") || !strings.Contains(f.Reason, "state file is not writable") {
		t.Fatalf("events %v, want a fatal fault event", rd.Events)
	}
	tg := c.Targets()["web"]
	if tg.Expect != dataset.ExpectStopped {
		t.Fatalf("target %+v, want stopped", tg)
	}
	// stopped here at once, the ladder out of it
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" {
		t.Fatalf("runs %+v, want the stop of the instance", rd.Run)
	}
	for _, e := range rd.Events {
		if _, ok := e.(ResourceFailed); ok {
			t.Fatalf("the ladder counted a fatal fault: %v", e)
		}
	}
	c.actionDone("web", "stop", nil, fc.Now())
	faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown, Fault: FaultFatal, Log: "again"})
	if tg2 := c.Targets()["web"]; tg2.Version != tg.Version {
		t.Fatalf("target set again: %+v", tg2)
	}
	// durable, and relayed to the peers with the other targets: every
	// node freezes its instance, and the one where it runs stops it
	// (monitor's target stopped)
	if c.State().Services["web"].Target.Expect != dataset.ExpectStopped {
		t.Fatal("the target is not in the state")
	}
}

// okFault is a failed action's error with its fault, as the ocf driver's.
type okFault struct{ rid, sev string }

func (e okFault) Error() string           { return e.rid + ": start failed: exit 6" }
func (e okFault) Fault() (string, string) { return e.rid, e.sev }

// A start that fails fatal stops and freezes the service too; a soft one
// does not.
func TestFatalStartFreezesTheService(t *testing.T) {
	fc := clock.NewFake(t0)
	c := New(Config{Name: "n1", MonitorInterval: 5 * time.Second, CheckInterval: time.Minute, WriteThrough: true}, State{})
	c.addInstance("web", faultSpec, fc.Now())
	if _, err := c.runAction("web", "start", "test", fc.Now()); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.actionDone("web", "start", errors.Join(okFault{"ocf#app", "soft"}), fc.Now())
	if _, ok := c.Targets()["web"]; ok {
		t.Fatal("a soft failure set a target")
	}
	faultCheck(t, c, fc, dataset.Resource{Status: dataset.StatusDown})
	c.clearLocal("web", "test", fc.Now())
	c.Ready()
	if _, err := c.runAction("web", "start", "test", fc.Now()); err != nil {
		t.Fatal(err)
	}
	c.Ready()
	c.actionDone("web", "start", errors.Join(okFault{"ocf#app", FaultFatal}, errors.New("rollback: ok")), fc.Now())
	rd := c.Ready()
	if faultEvent(rd, FaultFatal) == nil || c.Targets()["web"].Expect != dataset.ExpectStopped {
		t.Fatalf("events %v target %+v, want a fatal fault and the target stopped", rd.Events, c.Targets()["web"])
	}
}

// The quorum's stop budget counts an ocf resource's own stop limit (its
// agent's advised stop timeout, set by the shell), not the section's
// timeout: the self-stop deadline covers the stop the driver allows.
func TestStopBudgetCountsTheAgentsStopLimit(t *testing.T) {
	svc := &config.ServiceConfig{Name: "web", Resources: []config.ResourceConfig{
		{RID: "ip#vip", Timeout: 5 * time.Second},
		{RID: "ocf#data", Type: "ocf", Timeout: 30 * time.Second, StopLimit: 2 * time.Minute},
	}}
	c := New(Config{Name: "n1", Local: &maLocal{svcs: map[string]*config.ServiceConfig{"web": svc}},
		Quorum: QuorumConfig{Enabled: true, Timing: quorum.Timing{StopBudget: 3 * time.Second}}}, State{})
	if got := c.timing().StopBudget; got != 2*time.Minute+5*time.Second {
		t.Fatalf("stop budget %s, want 2m5s (the agent's 2m stop, the ip's 5s)", got)
	}
}

// The takeover gate's timing shown in svcmon and svcmgr explain
// (SelfStop) is the gate's own: the same deadline, the same stop budget,
// named by the service that makes it. A VIP and an app with a 10s limit:
// the ip's default stop limit is 5s (an address is removed in
// milliseconds), not the 30s of the other resources, so the budget is 15s.
func TestSelfStopIsTheGatesTiming(t *testing.T) {
	cfg, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\norchestrate = \"ha\"\nnodes = [\"n1\", \"n2\"]\n\n"+
		"[ip.vip]\nipname = \"192.0.2.10\"\nipdev = \"eth0\"\n\n[app.main]\nstart = \"true\"\ntimeout = \"10s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Name: "n1", Local: &maLocal{svcs: map[string]*config.ServiceConfig{"web": cfg}},
		Quorum: QuorumConfig{Enabled: true, Timing: quorum.Timing{Beat: time.Second, ArbitratorTimeout: time.Second}}}, State{})
	ss := c.SelfStop()
	if ss == nil {
		t.Fatal("no SelfStop with cluster.quorum on")
	}
	if got, want := time.Duration(ss.DeadlineMs)*time.Millisecond, c.timing().Deadline(); got != want {
		t.Fatalf("shown deadline %s, the gate's %s", got, want)
	}
	if ss.StopBudgetMs != 15000 || ss.StopBudgetOf != "web" || ss.DeadlineMs != 18000 {
		t.Fatalf("self-stop %+v: want a stop budget of 15s (ip 5s + app 10s) from web, a deadline of 18s", ss)
	}
	if !strings.Contains(ss.Terms, "stop budget 15s") {
		t.Fatalf("terms %q", ss.Terms)
	}
	off := New(Config{Name: "n1", Local: &maLocal{svcs: map[string]*config.ServiceConfig{"web": cfg}}}, State{})
	if off.SelfStop() != nil || off.QuorumInfo(time.Now()) != nil {
		t.Fatal("a gate shown with cluster.quorum off")
	}
}
