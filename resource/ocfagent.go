package resource

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/resource/ocf"
)

// ocfAgent runs an OCF resource agent ([ocf.NAME]): start, stop, monitor
// and validate-all, as Pacemaker runs them (package ocf: the environment,
// the exit codes, the meta-data).
//
// A monitor is a probe (OCF_RESKEY_CRM_meta_interval=0) until the resource
// is started here or found running: the agents then answer "not running"
// where what they manage is missing (a device only the active node sees),
// where a recurring monitor would say "not installed".
type ocfAgent struct {
	rc    config.ResourceConfig
	env   Env
	agent ocf.Agent

	mu sync.Mutex
	// mdFailed is when the meta-data could not be read (zero: it was, or
	// was not tried yet)
	mdFailed  time.Time
	active    bool           // started here, or found running: monitors are recurring
	lastCheck dataset.Status // to log monitor output only when the result changes
	lastFault string
	// hints are the parameters the meta-data describes as secrets (once
	// it was read: Label masks them; secrets.go)
	hints map[string]bool

	tracked // its cgroup, the process group of its last start
}

// metadataTimeout bounds the agent's meta-data action.
const metadataTimeout = 10 * time.Second

// ocfExitReason prefixes the line an agent prints to say why it failed
// (ocf_exit_reason).
const ocfExitReason = "ocf-exit-reason:"

func newOCF(rc config.ResourceConfig, env Env) (*ocfAgent, error) {
	prov, typ, err := config.ParseAgent(rc.Agent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rc.RID, err)
	}
	root := env.OCFRoot
	if root == "" {
		root = ocf.DefaultRoot
	}
	a := ocf.Agent{Root: root, Provider: prov, Type: typ}
	if err := ocf.Refused(a, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", rc.RID, err)
	}
	return &ocfAgent{rc: rc, env: env, agent: a, tracked: tracked{cg: newLeaf(env.Cgroup, rc.RID)}}, nil
}

func (o *ocfAgent) RID() string { return o.rc.RID }

// Label is the agent and its parameters: "ocf:heartbeat:IPaddr2
// cidr_netmask=24 ip=10.0.0.50", the values of those that hold a secret
// (by their name, or their description in the agent's meta-data once it
// was read) shown as ***, and the secrets named inside the other values
// masked (secrets.go).
func (o *ocfAgent) Label() string {
	keys := make([]string, 0, len(o.rc.Params))
	for k := range o.rc.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o.mu.Lock()
	hints := o.hints
	o.mu.Unlock()
	s := o.agent.Name()
	for _, k := range keys {
		v := MaskSecrets(o.rc.Params[k])
		if secretName(k) || hints[k] {
			v = "***"
		}
		s += " " + k + "=" + v
	}
	return s
}

// instance is OCF_RESOURCE_INSTANCE: the service and the resource, as
// Pacemaker's resource id is unique in the cluster ("web-vip").
func (o *ocfAgent) instance() string { return o.env.Service + "-" + o.rc.Name }

// OCFError is a failed action of an OCF agent, with the severity its exit
// code has (ocf.Soft, Hard, Fatal): the node core reads it (Fault) to
// exclude the node (hard) or stop and freeze the service (fatal).
type OCFError struct {
	RIDName  string
	Severity ocf.Severity
	Msg      string
}

func (e *OCFError) Error() string { return e.RIDName + ": " + e.Msg }

// Fault is the resource and the severity of the failure.
func (e *OCFError) Fault() (string, string) { return e.RIDName, string(e.Severity) }

// metadata returns the agent's meta-data, read once (nil when it cannot be
// read: the driver then runs with its own defaults).
func (o *ocfAgent) metadata(ctx context.Context) *ocf.Metadata {
	o.mu.Lock()
	if !o.mdFailed.IsZero() && time.Since(o.mdFailed) < mdRetry {
		o.mu.Unlock()
		return nil
	}
	o.mu.Unlock()
	// the global cache answers but the first time, and after an upgrade
	md, err := readMetadata(ctx, o.agent, o.env.VarDir)
	if err != nil && ctx.Err() != nil {
		return nil // asked again next time
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		if o.mdFailed.IsZero() {
			o.env.Log(o.rc.RID, "meta-data unreadable, default timeouts apply: "+err.Error())
		}
		o.mdFailed = time.Now()
		return nil
	}
	o.mdFailed = time.Time{}
	if o.hints == nil {
		o.hints = secretParams(md)
	}
	return md
}

// mdRetry is how long a driver whose agent's meta-data could not be read
// runs with the default timeouts before it tries again.
const mdRetry = time.Minute

// ReadOCFMetadata runs the meta-data action of agent and parses it.
func ReadOCFMetadata(ctx context.Context, agent ocf.Agent) (*ocf.Metadata, error) {
	return readMetadata(ctx, agent, "")
}

// mdCache keeps the meta-data read, by agent path, while the agent's file
// is unchanged (its size and modification time): a daemon reads each
// agent's once, and again after a package upgrade.
var mdCache = struct {
	sync.Mutex
	m map[string]mdEntry
}{m: map[string]mdEntry{}}

type mdEntry struct {
	size  int64
	mtime time.Time
	md    *ocf.Metadata
}

func readMetadata(ctx context.Context, agent ocf.Agent, dir string) (*ocf.Metadata, error) {
	if err := agent.Installed(); err != nil {
		return nil, err
	}
	st, err := os.Stat(agent.Path())
	if err != nil {
		return nil, err
	}
	mdCache.Lock()
	e, ok := mdCache.m[agent.Path()]
	mdCache.Unlock()
	if ok && e.size == st.Size() && e.mtime.Equal(st.ModTime()) {
		return e.md, nil
	}
	md, err := runMetadata(ctx, agent, dir)
	if err != nil {
		return nil, err
	}
	mdCache.Lock()
	mdCache.m[agent.Path()] = mdEntry{size: st.Size(), mtime: st.ModTime(), md: md}
	mdCache.Unlock()
	return md, nil
}

// runMetadata runs the agent's meta-data action and parses its output.
func runMetadata(ctx context.Context, agent ocf.Agent, dir string) (*ocf.Metadata, error) {
	env := ocf.Env{Agent: agent, Instance: "meta-data", Timeout: metadataTimeout}
	res, out, err := runCapture(ctx, command{
		argv: []string{agent.Path(), ocf.ActionMetadata}, action: "meta-data",
		timeout: metadataTimeout, env: env.Environ(BaseEnv()), dir: dir,
	})
	if err != nil {
		return nil, fmt.Errorf("%s meta-data: %w", agent.Name(), err)
	}
	if res.code != 0 {
		return nil, fmt.Errorf("%s meta-data: %s", agent.Name(), res.describe())
	}
	md, err := ocf.ParseMetadata(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", agent.Name(), err)
	}
	return md, nil
}

// timeout is the time limit of action: its own keyword, else timeout
// when the section sets it, else the agent's advice, else 30s.
func (o *ocfAgent) timeout(ctx context.Context, action string) time.Duration {
	return ocfTimeout(o.rc, action, func() *ocf.Metadata { return o.metadata(ctx) })
}

func ocfTimeout(rc config.ResourceConfig, action string, md func() *ocf.Metadata) time.Duration {
	own := map[string]time.Duration{ocf.ActionStart: rc.StartTimeout, ocf.ActionStop: rc.StopTimeout,
		ocf.ActionMonitor: rc.MonitorTimeout}[action]
	if own > 0 {
		return own
	}
	if rc.TimeoutSet && rc.Timeout > 0 {
		return rc.Timeout
	}
	if m := md(); m != nil {
		if d := m.Timeout(action); d > 0 {
			return d
		}
	}
	return timeoutOf(rc)
}

// OCFStopLimit is the time limit of the stop of the ocf resource rc on
// this node (its agent under root): what the driver gives its stop, for
// the quorum's stop budget (config.ResourceConfig.StopLimit). The agent's
// meta-data is read once per agent (cached); when it cannot be read
// within ctx, the resource's timeout.
func OCFStopLimit(ctx context.Context, rc config.ResourceConfig, root string) time.Duration {
	prov, typ, err := config.ParseAgent(rc.Agent)
	if err != nil {
		return timeoutOf(rc)
	}
	if root == "" {
		root = ocf.DefaultRoot
	}
	a := ocf.Agent{Root: root, Provider: prov, Type: typ}
	return ocfTimeout(rc, ocf.ActionStop, func() *ocf.Metadata {
		md, _ := readMetadata(ctx, a, "")
		return md
	})
}

// Timeouts are the time limits of start, stop and monitor (for tests and
// the status).
func (o *ocfAgent) Timeouts(ctx context.Context) (start, stop, monitor time.Duration) {
	return o.timeout(ctx, ocf.ActionStart), o.timeout(ctx, ocf.ActionStop), o.timeout(ctx, ocf.ActionMonitor)
}

// outcome is one run of an action.
type outcome struct {
	code   int    // the exit code, -1 when it did not exit (timeout, signal)
	reason string // the agent's exit reason, else its last line, else how it ended
	text   string // how it ended: "exit 7 (OCF_NOT_RUNNING: not running): reason"
	lines  []string
}

// act runs one action of the agent. live logs the output as it comes.
func (o *ocfAgent) act(ctx context.Context, action string, interval time.Duration, live bool) (outcome, error) {
	timeout := o.timeout(ctx, action)
	env := ocf.Env{Agent: o.agent, Instance: o.instance(), Node: o.env.Node, Params: o.rc.Params,
		Timeout: timeout, Interval: interval, RscTmp: o.env.RscTmp}
	if err := os.MkdirAll(env.RscTmpDir(), 0o755); err != nil {
		return outcome{code: -1}, fmt.Errorf("%s: HA_RSCTMP: %w", o.rc.RID, err)
	}
	c := command{
		argv: []string{o.agent.Path(), action}, action: action, timeout: timeout,
		env: append(env.Environ(BaseEnv()), fencingEnv(ctx)...), dir: o.env.VarDir, keep: 20,
		cgroup: o.cg,
	}
	if live {
		c.live = func(line string) { o.env.Log(o.rc.RID, line) }
	}
	res, err := run(ctx, c)
	if action == ocf.ActionStart {
		o.started(res.pid)
	}
	if err != nil {
		return outcome{code: -1}, fmt.Errorf("%s: %s: %w", o.rc.RID, action, err)
	}
	out := outcome{code: res.code, lines: res.lines}
	for _, l := range res.lines {
		if i := strings.Index(l, ocfExitReason); i >= 0 {
			out.reason = strings.TrimSpace(l[i+len(ocfExitReason):])
		}
	}
	if out.reason == "" {
		out.reason = res.last()
	}
	switch {
	case res.timedOut || res.canceled || res.signal != "":
		out.code = -1
		out.text = res.describe()
		if res.timedOut {
			out.text = fmt.Sprintf("timed out after %s", timeout)
		}
	default:
		out.text = ocf.Describe(res.code)
		if out.reason != "" {
			out.text += ": " + out.reason
		}
	}
	return out, nil
}

// fail builds the error of a failed action with the severity of its code
// (a timeout is soft).
func (o *ocfAgent) fail(action string, out outcome) *OCFError {
	sev := ocf.Soft
	if out.code >= 0 {
		sev = ocf.CodeOf(out.code).Severity
	}
	msg := action + " failed: " + out.text
	switch sev {
	case ocf.Hard:
		msg += ": this node cannot run it"
	case ocf.Fatal:
		msg += ": the resource is not configured right (fix the config)"
	}
	return &OCFError{RIDName: o.rc.RID, Severity: sev, Msg: msg}
}

func (o *ocfAgent) setActive(v bool) {
	o.mu.Lock()
	o.active = v
	o.mu.Unlock()
}

func (o *ocfAgent) isActive() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.active
}

func (o *ocfAgent) interval() time.Duration {
	if o.env.MonitorInterval > 0 {
		return o.env.MonitorInterval
	}
	return 10 * time.Second
}

// usable says why the agent cannot run here: not installed, or refused.
func (o *ocfAgent) usable(ctx context.Context) *OCFError {
	if err := o.agent.Installed(); err != nil {
		return &OCFError{RIDName: o.rc.RID, Severity: ocf.Hard, Msg: "cannot run here: " + err.Error()}
	}
	if err := ocf.Refused(o.agent, o.metadata(ctx)); err != nil {
		return &OCFError{RIDName: o.rc.RID, Severity: ocf.Fatal, Msg: err.Error()}
	}
	return nil
}

// Start runs validate-all (when the agent has it), then start; a start
// that says 0 is confirmed by a monitor, which must say running.
func (o *ocfAgent) Start(ctx context.Context) error {
	if e := o.usable(ctx); e != nil {
		return e
	}
	if md := o.metadata(ctx); md != nil && md.HasAction(ocf.ActionValidate) {
		out, err := o.act(ctx, ocf.ActionValidate, 0, true)
		if err != nil {
			return err
		}
		if out.code != 0 {
			return o.fail(ocf.ActionValidate, out)
		}
	}
	o.env.Log(o.rc.RID, "start: "+o.agent.Name())
	out, err := o.act(ctx, ocf.ActionStart, 0, true)
	if err != nil {
		return err
	}
	if out.code != 0 {
		return o.fail(ocf.ActionStart, out)
	}
	o.setActive(true)
	mon, err := o.act(ctx, ocf.ActionMonitor, o.interval(), true)
	if err != nil {
		return err
	}
	if mon.code != 0 {
		e := o.fail("start", mon)
		e.Msg = "start said success but the monitor that confirms it says " + mon.text
		return e
	}
	return nil
}

// Stop runs stop. A stop that exits 5 (not installed) is done: nothing
// of the resource can run here. A stop that fails on a resource that the monitor finds
// not running breaks the OCF rule (stopping a stopped resource succeeds):
// it is reported, and the stop counts as done since the resource is down.
func (o *ocfAgent) Stop(ctx context.Context) error {
	if err := o.agent.Installed(); err != nil {
		// nothing of it can run here: nothing of it runs here
		o.env.Log(o.rc.RID, "stop: nothing to do: "+err.Error())
		o.setActive(false)
		return nil
	}
	o.env.Log(o.rc.RID, "stop: "+o.agent.Name())
	out, err := o.act(ctx, ocf.ActionStop, 0, true)
	if err != nil {
		return err
	}
	if out.code == 0 {
		o.setActive(false)
		return nil
	}
	if out.code == ocf.ErrInstalled {
		// what is not installed here does not run here
		o.env.Log(o.rc.RID, "stop: "+out.text+": nothing of it can run on this node: taken as stopped")
		o.setActive(false)
		return nil
	}
	mon, merr := o.act(ctx, ocf.ActionMonitor, 0, false)
	if merr == nil && mon.code == ocf.NotRunning {
		o.env.Log(o.rc.RID, fmt.Sprintf("AGENT BUG: %s stop returned %s on a resource its monitor says is not running; the OCF API wants 0 there (Pacemaker would count a failed stop): taken as stopped", o.agent.Name(), out.text))
		o.setActive(false)
		return nil
	}
	return o.fail(ocf.ActionStop, out)
}

// Status runs the monitor: 0 up, 7 down, 1 and the other failures down
// (the restart ladder), 2 to 6 down with the fault (FaultStatus).
func (o *ocfAgent) Status(ctx context.Context) (dataset.Status, string) {
	st, reason, _ := o.FaultStatus(ctx)
	return st, reason
}

// FaultStatus is Status with the severity of an error the monitor
// reported: ocf.Hard (2 to 5, or the agent not installed here: this node
// cannot run it) or ocf.Fatal (6: not configured), "" otherwise.
func (o *ocfAgent) FaultStatus(ctx context.Context) (dataset.Status, string, string) {
	if e := o.usable(ctx); e != nil {
		o.setActive(false)
		return dataset.StatusDown, e.Msg, string(e.Severity)
	}
	active := o.isActive()
	var interval time.Duration
	if active {
		interval = o.interval()
	}
	out, err := o.act(ctx, ocf.ActionMonitor, interval, false)
	var st dataset.Status
	var reason, fault string
	switch {
	case err != nil:
		st, reason = dataset.StatusWarn, "monitor: "+err.Error()
	case out.code < 0:
		// a monitor that timed out failed, as Pacemaker takes it (a
		// warn would count as running, here and in every peer's view)
		st, reason = dataset.StatusDown, "monitor "+out.text
	default:
		switch ocf.Monitor(out.code) {
		case ocf.Running:
			st, reason = dataset.StatusUp, out.reason
			if !active {
				o.setActive(true)
			}
		case ocf.Stopped:
			st, reason = dataset.StatusDown, out.reason
			o.setActive(false)
		case ocf.Failed:
			st, reason = dataset.StatusDown, "monitor: "+out.text
		case ocf.Error:
			// down: whatever the agent manages does not run here (a
			// warn would count as running, here and in every peer's view)
			sev := ocf.CodeOf(out.code).Severity
			st, reason, fault = dataset.StatusDown, "monitor: "+out.text, string(sev)
			if sev == ocf.Hard {
				reason += ": this node cannot run it"
			}
		}
	}
	o.mu.Lock()
	changed := st != o.lastCheck || fault != o.lastFault
	o.lastCheck, o.lastFault = st, fault
	o.mu.Unlock()
	if changed {
		for _, l := range out.lines {
			o.env.Log(o.rc.RID, l)
		}
		if fault != "" {
			o.env.Log(o.rc.RID, reason)
		}
	}
	return st, reason, fault
}

// Validate runs the agent's validate-all.
func (o *ocfAgent) Validate(ctx context.Context) error {
	if e := o.usable(ctx); e != nil {
		return e
	}
	out, err := o.act(ctx, ocf.ActionValidate, 0, false)
	if err != nil {
		return err
	}
	if out.code != 0 {
		return o.fail(ocf.ActionValidate, out)
	}
	return nil
}

// runCapture is run with the whole standard output kept (the meta-data):
// lines are joined back with newlines.
func runCapture(ctx context.Context, c command) (runResult, []byte, error) {
	var b strings.Builder
	var mu sync.Mutex
	c.live = func(line string) {
		mu.Lock()
		if b.Len() < 1<<20 {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		mu.Unlock()
	}
	res, err := run(ctx, c)
	mu.Lock()
	defer mu.Unlock()
	return res, []byte(b.String()), err
}

// Faulter is implemented by the drivers whose checks tell the severity of
// an error (the ocf driver): Set.Status puts it in dataset.Resource.Fault.
type Faulter interface {
	FaultStatus(ctx context.Context) (dataset.Status, string, string)
}

var _ Faulter = (*ocfAgent)(nil)
