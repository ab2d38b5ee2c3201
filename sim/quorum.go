package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"haven/config"
	"haven/driver"
	"haven/node"
	"haven/quorum"
)

// The simulation's quorum (docs/behaviour.md 3): cluster.quorum and split_action
// on the cluster line (quorum=true split_action=stop), a node's own
// split_action on its node line, arbitrators that each node reaches or not,
// fence commands that succeed or fail, one-way link loss and daemon pauses:
//
//	cluster n1 n2 n3 quorum=true split_action=stop [stop_budget=3s]
//	node n3 split_action=disabled
//	arbitrator a [weight=1] [timeout=1s] [onevote]
//	                                      a setup line: every node reaches it;
//	                                      onevote: a Haven one-vote arbitrator
//	                                      (the real quorum.LeaseBook on the fake clock)
//	arbitrator a restart                  a command: the one-vote arbitrator restarts
//	                                      (it forgets every lease)
//	stonith n1 ok|fail                    n1's fence command (a setup line or a command)
//	arbitrator a unreachable n1 [n2...]   a command: those nodes no longer reach it
//	arbitrator a reachable n1 [n2...]     they reach it again
//	oneway n1 n2                          the frames of n1 no longer reach n2 (heal restores)
//	pause n1 10s                          n1's daemon and heartbeat stop for 10s (SIGSTOP), then run
//	expect web never twice                no two nodes ever ran web at once so far
//	expect web started alone              no start of web began while it was active
//	                                      (running, or starting) on another node
//
// A reachable arbitrator answers at once, an unreachable one after its
// timeout; a fence takes fenceDuration, and a fence that succeeds powers
// the machine off (as a crash: what it ran stops, its daemon is gone). Every node's daemon drives the
// real node core (quorum.go there); the driver part is here.

// fenceDuration is how long a simulated fence command runs.
const fenceDuration = time.Second

// simArbitrator is a simulated arbitrator.
type simArbitrator struct {
	name        string
	weight      int
	timeout     time.Duration
	unreachable map[string]bool // by node
	// book is a one-vote arbitrator's lease book (nil: a plain one)
	book *quorum.LeaseBook
}

// quorumOptions are the quorum settings of the cluster line.
type quorumOptions struct {
	enabled    bool
	split      string
	stopBudget time.Duration
	arbs       []*simArbitrator
	stonith    map[string]bool // node -> the fence succeeds
	splitOf    map[string]string
	maxUp      map[string]int // svc -> most nodes running it at once so far
	// minUp: svc -> the fewest nodes running it at once since its last
	// rollout request (absent: none asked)
	minUp    map[string]int
	overlaps map[string][]string // svc -> when and where it ran twice
}

// pending is a probe answer or a fence end due later.
type pending struct {
	at    time.Time
	probe *node.Probe
	ok    bool
	fence string
	grant *quorum.GrantAnswer // a one-vote arbitrator's answer (probe set)
}

// quorumSetting takes a quorum key of the cluster line; false when k is
// not one.
func (c *Cluster) quorumSetting(k, v string) (bool, error) {
	switch k {
	case "quorum":
		b, err := strconv.ParseBool(v)
		c.q.enabled = b
		return true, err
	case "split_action":
		c.q.split = v
		return true, checkSplit(v)
	case "stop_budget":
		d, err := time.ParseDuration(v)
		c.q.stopBudget = d
		return true, err
	}
	return false, nil
}

func checkSplit(v string) error {
	switch v {
	case node.SplitStop, node.SplitCrash, node.SplitReboot, node.SplitDisabled:
		return nil
	}
	return fmt.Errorf("split_action: want stop, crash, reboot or disabled, got %q", v)
}

// clusterConfig is the simulated cluster.toml seen by node n, whose
// split_action it sets in nc (the cluster line's, or the node line's).
func (c *Cluster) clusterConfig(n string, nc *config.NodeConfig) *config.ClusterConfig {
	nc.SplitAction = c.q.split
	if nc.SplitAction == "" {
		nc.SplitAction = node.SplitStop
	}
	if s, ok := c.q.splitOf[n]; ok {
		nc.SplitAction = s
	}
	cl := &config.ClusterConfig{Name: "sim", Quorum: c.q.enabled, Nodes: c.members, Stonith: map[string]config.Stonith{}}
	for _, a := range c.q.arbs {
		uri := "tcp://" + a.name
		if a.book != nil {
			uri = driver.OneVoteScheme + a.name
		}
		cl.Arbitrators = append(cl.Arbitrators, config.Arbitrator{Name: a.name, URI: uri, Weight: a.weight, Timeout: a.timeout})
	}
	for name := range c.q.stonith {
		cl.Stonith[name] = config.Stonith{Node: name}
	}
	return cl
}

// stopBudget is the longest stop of an instance (stop_budget on the
// cluster line, else twice the simulated stop).
func (c *Cluster) stopBudget() time.Duration {
	if c.q.stopBudget != 0 {
		return c.q.stopBudget
	}
	return 2 * c.opt.StopDuration
}

// quorumLine runs the quorum lines of a script (setup or command); false
// when the verb is not one of them.
func (r *runner) quorumLine(verb string, args []string) (bool, error) {
	c := r.c
	switch verb {
	case "arbitrator":
		if len(args) >= 2 && (args[1] == "unreachable" || args[1] == "reachable") {
			a := c.arbitrator(args[0])
			if a == nil {
				return true, fmt.Errorf("arbitrator: no arbitrator %q", args[0])
			}
			for _, n := range args[2:] {
				if c.nodes[n] == nil {
					return true, fmt.Errorf("arbitrator: no node %q", n)
				}
				a.unreachable[n] = args[1] == "unreachable"
			}
			c.logf("-", "", "arbitrator %s %s from %s", a.name, args[1], strings.Join(args[2:], " "))
			return true, nil
		}
		if len(args) == 2 && args[1] == "restart" {
			a := c.arbitrator(args[0])
			if a == nil || a.book == nil {
				return true, fmt.Errorf("arbitrator %s restart: no one-vote arbitrator of that name", args[0])
			}
			a.book = quorum.NewLeaseBook(quorum.LeaseConfig{Lease: quorum.DefaultLease, Fresh: quorum.DefaultFresh}, c.clk.Now())
			c.logf("-", "", "arbitrator %s restarted: it forgot every lease", a.name)
			return true, nil
		}
		if r.booted || len(args) == 0 {
			return true, errors.New("arbitrator NAME [weight=N] [timeout=D] is a setup line; then arbitrator NAME reachable|unreachable NODE [NODE ...]")
		}
		a := &simArbitrator{name: args[0], weight: 1, timeout: time.Second, unreachable: map[string]bool{}}
		for _, kv := range args[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "weight":
				w, err := strconv.Atoi(v)
				if err != nil || w < 0 {
					return true, fmt.Errorf("arbitrator: bad weight %q", v)
				}
				a.weight = w
			case "timeout":
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return true, fmt.Errorf("arbitrator: bad timeout %q", v)
				}
				a.timeout = d
			case "onevote":
				a.book = quorum.NewLeaseBook(quorum.LeaseConfig{Lease: quorum.DefaultLease, Fresh: quorum.DefaultFresh}, c.clk.Now())
			default:
				return true, fmt.Errorf("arbitrator: unknown setting %q", kv)
			}
		}
		c.q.arbs = append(c.q.arbs, a)
		return true, nil
	case "stonith":
		if len(args) != 2 || c.nodes[args[0]] == nil || args[1] != "ok" && args[1] != "fail" {
			return true, errors.New("stonith NODE ok|fail")
		}
		if c.q.stonith == nil {
			c.q.stonith = map[string]bool{}
		}
		c.q.stonith[args[0]] = args[1] == "ok"
		if r.booted {
			c.logf("-", "", "fence command of %s will %s", args[0], map[bool]string{true: "succeed", false: "fail"}[args[1] == "ok"])
		}
		return true, nil
	case "oneway":
		if len(args) != 2 || c.nodes[args[0]] == nil || c.nodes[args[1]] == nil {
			return true, errors.New("oneway FROM TO")
		}
		c.net.Drop(args[0], args[1], true)
		c.logf("-", "", "frames of %s no longer reach %s", args[0], args[1])
		c.settle()
		return true, nil
	case "pause":
		if len(args) != 2 || c.nodes[args[0]] == nil {
			return true, errors.New("pause NODE DURATION")
		}
		d, err := time.ParseDuration(args[1])
		if err != nil || d <= 0 {
			return true, fmt.Errorf("pause: bad duration %q", args[1])
		}
		return true, c.pause(args[0], d)
	}
	return false, nil
}

func (c *Cluster) arbitrator(name string) *simArbitrator {
	for _, a := range c.q.arbs {
		if a.name == name {
			return a
		}
	}
	return nil
}

// pause stops node's daemon and heartbeat for d (its frames and the
// frames to it are lost: pausedNow), as a SIGSTOP would; it runs again at
// the end.
func (c *Cluster) pause(name string, d time.Duration) error {
	n := c.nodes[name]
	if n.d == nil {
		return fmt.Errorf("pause: %s's daemon is not running", name)
	}
	n.d.pausedUntil, n.ranUntil = c.clk.Now().Add(d), c.clk.Now()
	c.logf(name, "", "daemon paused for %s", d)
	return nil
}

// pausedNow reports whether node's daemon is paused at this instant: the
// network loses its frames and those sent to it (loseFrame) until the
// pause ends, whatever else ends meanwhile (a one-way loss healed, the
// pause of another node ended).
func (c *Cluster) pausedNow(name string) bool {
	n := c.nodes[name]
	return n != nil && n.d != nil && !n.d.pausedUntil.IsZero() && c.clk.Now().Before(n.d.pausedUntil)
}

// resume ends a pause that is over.
func (d *daemon) resume() {
	if d.pausedUntil.IsZero() || d.c.clk.Now().Before(d.pausedUntil) {
		return
	}
	d.pausedUntil = time.Time{}
	d.c.logf(d.name, "", "daemon runs again")
}

// paused reports whether the daemon is paused now.
func (d *daemon) paused() bool {
	d.resume()
	return !d.pausedUntil.IsZero()
}

// probe asks an arbitrator: a reachable one answers at once, an
// unreachable one after its timeout.
func (d *daemon) probe(p node.Probe) {
	now := d.c.clk.Now()
	a := d.c.arbitrator(p.Name)
	if a == nil {
		return
	}
	ok := !a.unreachable[d.name]
	at := now
	if !ok {
		at = now.Add(a.timeout)
	}
	var g *quorum.GrantAnswer
	if a.book != nil && ok {
		// the report reaches the arbitrator now: its real book decides
		ans := a.book.Report(now, quorum.Report{Node: d.name, Partition: p.Partition, Running: p.Running})
		g = &ans
	}
	d.later = append(d.later, pending{at: at, probe: &p, ok: ok, grant: g})
}

// fence runs the fence command of a lost peer: it ends after
// fenceDuration.
func (d *daemon) fence(f node.Fence) {
	d.later = append(d.later, pending{at: d.c.clk.Now().Add(fenceDuration), fence: f.Node, ok: d.c.q.stonith[f.Node]})
	d.c.logf(d.name, "", "fence command of %s runs", f.Node)
}

// runLater delivers the probe answers and fence ends that are due.
func (d *daemon) runLater() bool {
	now := d.c.clk.Now()
	did := false
	keep := d.later[:0]
	var due []pending
	for _, p := range d.later {
		if now.Before(p.at) {
			keep = append(keep, p)
		} else {
			due = append(due, p)
		}
	}
	d.later = keep
	for _, p := range due {
		did = true
		if p.probe != nil && d.c.arbitrator(p.probe.Name) != nil && d.c.arbitrator(p.probe.Name).book != nil {
			if p.grant == nil {
				d.drv.Input(node.Granted{Arbitrator: p.probe.Name, ErrText: "no answer within the timeout", Sent: p.probe.Sent, Now: now})
			} else {
				d.drv.Input(node.Granted{Arbitrator: p.probe.Name, Grant: *p.grant, Sent: p.probe.Sent, Now: now})
			}
		} else if p.probe != nil {
			detail := "answered"
			if !p.ok {
				detail = "no answer within the timeout"
			}
			d.drv.Input(node.Voted{Arbitrator: p.probe.Name, OK: p.ok, Detail: detail, Sent: p.probe.Sent, Now: now})
		} else {
			var err error
			if !p.ok {
				err = errors.New("exit status 1")
			} else if n := d.c.nodes[p.fence]; n != nil && n.machineUp {
				// a fence powers the machine off: what it ran stops
				d.c.logf(p.fence, "", "fenced by %s: powered off", d.name)
				d.c.net.Crash(p.fence)
				n.d, n.machineUp = nil, false
				d.c.running[p.fence] = map[string]bool{}
			}
			d.drv.Input(node.FenceEnded{Node: p.fence, Err: err, Now: now})
		}
		d.drv.Apply()
	}
	return did
}

// laterDue is the earliest due time of the pending answers (zero: none).
func (d *daemon) laterDue() time.Time {
	var t time.Time
	for _, p := range d.later {
		if t.IsZero() || p.at.Before(t) {
			t = p.at
		}
	}
	if !d.pausedUntil.IsZero() && (t.IsZero() || d.pausedUntil.Before(t)) {
		t = d.pausedUntil
	}
	return t
}

// noteRunning records how many nodes run svc now, and every overlap.
func (c *Cluster) noteRunning(svc string) {
	var on []string
	for _, n := range c.names {
		if c.running[n][svc] {
			on = append(on, n)
		}
	}
	if c.q.maxUp == nil {
		c.q.maxUp, c.q.overlaps = map[string]int{}, map[string][]string{}
	}
	c.q.maxUp[svc] = max(c.q.maxUp[svc], len(on))
	if m, ok := c.q.minUp[svc]; ok {
		c.q.minUp[svc] = min(m, len(on))
	}
	if len(on) > 1 {
		c.q.overlaps[svc] = append(c.q.overlaps[svc], fmtTime(c.Now())+" "+strings.Join(on, ","))
	}
}

// holdsNeverTwice is "expect SVC never twice".
func (c *Cluster) holdsNeverTwice(svc string) (string, bool) {
	if o := c.q.overlaps[svc]; len(o) > 0 {
		return "up on several nodes at " + strings.Join(o, "; "), false
	}
	return fmt.Sprintf("at most %d node at once", c.q.maxUp[svc]), true
}

// watchMinUp starts counting the fewest nodes running svc at once
// ("expect SVC at least N up since rollout"), from what runs now.
func (c *Cluster) watchMinUp(svc string) {
	if c.q.minUp == nil {
		c.q.minUp = map[string]int{}
	}
	n := 0
	for _, name := range c.names {
		if c.running[name][svc] {
			n++
		}
	}
	c.q.minUp[svc] = n
}
