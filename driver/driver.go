// Package driver drives the node core (package node) for both of its
// shells: the daemon (package daemon, real disk, processes and network)
// and the simulation (package sim, the same in memory). It owns the shell
// logic that is not IO: when to run a full or an incremental decision
// pass, the mapping of heartbeat events to the core's peer events with the
// check of the names a peer sends, the routing of admin requests, the
// core's config built from node.toml and cluster.toml, the tickets of the
// callers waiting for an answer, and the order in which a Ready is carried
// out. A shell implements Effects (the IO) and calls the driver's inputs
// on its loop; the driver reads time through the shell's clock.
package driver

import (
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node"
)

// Effects is the IO of a node, carried out by its shell. Each method runs
// on the shell's loop; what ends later (a write, an action, a check, a
// probe, a fence, a config file) is reported back to the core, then
// Driver.Apply.
type Effects interface {
	// SaveState writes the durable state numbered seq (st is the core's
	// own: encode or copy it before returning). written reports that the
	// state is on disk on return (a synchronous disk): the driver then
	// reports it to the core and carries out what waited for it in the
	// same pass. Otherwise the shell reports the write later
	// (Driver.Persisted).
	SaveState(seq uint64, st *node.State) (written bool)
	// Order binds the actions the core ordered and holds until their
	// state is on disk to what the shell holds now (node.Ready.Ordered).
	Order(acts []node.Action)
	// Event records a typed event of the core (log, timeline, stream).
	Event(e node.Event)
	// StartAction, RunNodeAction and StartCheck run what the core
	// ordered; Probe and Fence ask an arbitrator and fence a lost peer.
	StartAction(a node.Action)
	RunNodeAction(na node.NodeAction)
	StartCheck(ck node.Check)
	Probe(p node.Probe)
	Fence(f node.Fence)
	// ArmWake arms the wake-up timer at t; when it fires the shell calls
	// Driver.Wake.
	ArmWake(t time.Time)
	// Announce announces again the addresses of the local instance of svc
	// (node.Ready.Announce); nothing is reported back.
	Announce(svc string)
	// ApplyConfigs writes or removes config files, in order, each reported
	// with the input node.ConfigWritten.
	ApplyConfigs(ops []node.ConfigOp)
	// Publish sends the local dataset: it changed since the last send.
	Publish()
	// RefusedName reports an invalid name a peer sent (once per name).
	RefusedName(r RefusedName)
}

// Driver is one node's driver of its core. Only the shell's loop calls it.
type Driver struct {
	// Core is the node core; the shell reads its queries directly.
	Core *node.Core
	fx   Effects
	clk  clock.Clock

	tickets map[node.Ticket]func(node.Answer)
	// gen counts the changes of the local dataset; stepGen is gen at the
	// last decision pass, published at the last send.
	gen, stepGen, published uint64
	// passes counts the decision passes run (Passes), checks the status
	// checks ended (Checks).
	passes, checks   uint64
	lastStep, stepAt time.Time
	badNames         map[string]bool
	// suspended is the host's suspended time last told to the core
	// (Resumed), when the clock knows it (clock.Suspender).
	suspended time.Duration
	// peerCopies are the peers' last data taken (heartbeat.go).
	peerCopies map[string]peerCopy

	// Trace, when set, sees every input the driver hands the core, in
	// order (to log a run); rec, when set, records the run (Recording).
	Trace func(node.Input)
	rec   *Recording

	// ObserveDecision, when set, gets the duration of each decision pass
	// as measured by Stopwatch (the CPU time of the pass, whatever the
	// loop's clock is).
	ObserveDecision func(time.Duration)
	Stopwatch       clock.Clock
}

// New returns the driver of core, carrying out its Readies with fx and
// reading time from clk.
func New(core *node.Core, fx Effects, clk clock.Clock) *Driver {
	d := &Driver{Core: core, fx: fx, clk: clk, tickets: map[node.Ticket]func(node.Answer){}}
	if s, ok := clk.(clock.Suspender); ok {
		d.suspended = s.Suspended()
	}
	return d
}

// suspendMin is the shortest suspend of the host told to the core (the
// two clocks behind clock.Suspender are read one after the other: a few
// microseconds of jitter). Shorter ones add up until they reach it.
const suspendMin = 50 * time.Millisecond

// resumed tells the core, before any other input, that the host was
// suspended since the last input (CLOCK_BOOTTIME moved on, CLOCK_MONOTONIC
// did not): the core's clock does not count that time.
func (d *Driver) resumed() {
	s, ok := d.clk.(clock.Suspender)
	if !ok {
		return
	}
	total := s.Suspended()
	if total-d.suspended < suspendMin {
		return
	}
	in := node.Resumed{Slept: total - d.suspended, Now: d.clk.Now()}
	d.suspended = total
	d.step(in)
}

// step hands the core one input, seen by Trace and the recording.
func (d *Driver) step(in node.Input) node.Ticket {
	if d.Trace != nil {
		d.Trace(in)
	}
	if d.rec == nil {
		return d.Core.Step(in)
	}
	d.rec.steps = append(d.rec.steps, recStep{in: in})
	d.rec.inCore = true
	defer func() { d.rec.inCore = false }()
	return d.Core.Step(in)
}

// TickPeriod is the shortest time between two ticks of the loop, and
// between two decision passes while state writes fail.
const TickPeriod = 500 * time.Millisecond

// Now is the time of the shell's clock.
func (d *Driver) Now() time.Time { return d.clk.Now() }

// Apply carries out what the core asks after the inputs, in the order of
// node.Ready: the durable state to the disk first (the core holds the
// answers and actions resting on it until it is written), the actions
// bound, the dataset marked changed, the events, the answers to their
// callers, the actions, node actions, checks, probes, fences and
// announces, the wake-up, then the config files.
func (d *Driver) Apply() {
	for d.Core.HasReady() {
		rd := d.ready()
		for p := rd.Persist; p != nil; {
			if !d.fx.SaveState(rd.PersistSeq, p) {
				break
			}
			// written at once: what waited for it is released in this
			// same pass, in the order of one Ready
			d.Input(node.Persisted{Seq: rd.PersistSeq, Now: d.clk.Now()})
			rel := d.ready()
			p = rel.Persist
			rd.Append(rel)
		}
		d.fx.Order(rd.Ordered)
		if rd.Publish {
			d.Changed()
		}
		for _, e := range rd.Events {
			d.fx.Event(e)
		}
		for _, a := range rd.Answers {
			if f := d.tickets[a.Ticket]; f != nil {
				delete(d.tickets, a.Ticket)
				f(a)
			}
		}
		for _, a := range rd.Run {
			d.fx.StartAction(a)
		}
		for _, na := range rd.NodeActions {
			d.fx.RunNodeAction(na)
		}
		for _, ck := range rd.Check {
			d.fx.StartCheck(ck)
		}
		for _, p := range rd.Probes {
			d.fx.Probe(p)
		}
		for _, f := range rd.Fences {
			d.fx.Fence(f)
		}
		for _, svc := range rd.Announce {
			d.fx.Announce(svc)
		}
		d.armWake(rd.WakeAt)
		if len(rd.Configs) > 0 {
			d.fx.ApplyConfigs(rd.Configs)
		}
	}
}

// ready takes the core's Ready (seen by a Recording).
func (d *Driver) ready() node.Ready {
	if d.rec == nil {
		return d.Core.Ready()
	}
	d.rec.inCore = true
	rd := d.Core.Ready()
	d.rec.inCore = false
	d.rec.steps = append(d.rec.steps, recStep{ready: true})
	d.rec.out = append(d.rec.out, Describe(rd)...)
	return rd
}

// Input hands the core one input (seen by Trace) without carrying out
// what it asks: for an effect that reports at once, inside Apply (the
// Apply running takes it). It returns the ticket of a request.
func (d *Driver) Input(in node.Input) node.Ticket {
	d.resumed()
	return d.step(in)
}

// Step hands the core one input, then carries out what it asks.
func (d *Driver) Step(in node.Input) {
	d.Input(in)
	d.Apply()
}

// Ask hands the core a request (an input with a ticket): done gets its
// answer, in this Apply or a later one.
func (d *Driver) Ask(in node.Input, done func(node.Answer)) {
	d.tickets[d.Input(in)] = done
	d.Apply()
}

// Await calls done with the answer of ticket tk (in a later Apply, or in
// this one), then carries out what the core asks.
func (d *Driver) Await(tk node.Ticket, done func(node.Answer)) {
	d.tickets[tk] = done
	d.Apply()
}

// Persisted is the shell's report of the write of the state numbered seq
// (err: it failed; the core rolls back what was not written).
func (d *Driver) Persisted(seq uint64, err error) {
	d.Input(node.Persisted{Seq: seq, Err: err, Now: d.clk.Now()})
	d.Apply()
}

// Changed marks the local dataset changed (the heartbeats send a delta).
func (d *Driver) Changed() { d.gen++ }

// Gen is the generation of the local dataset.
func (d *Driver) Gen() uint64 { return d.gen }

// Publish sends the local dataset when it changed since the last send.
// It reports whether it sent it.
func (d *Driver) Publish() bool {
	if d.gen == d.published {
		return false
	}
	d.published = d.gen
	d.fx.Publish()
	return true
}

// Pass is the loop's rule after each input: a decision pass when the
// local dataset or the view changed since the last one and the core may
// step (MayStep), then the dataset sent once nothing is ahead of the disk.
// It reports whether it sent the dataset.
func (d *Driver) Pass() bool {
	if (d.gen != d.stepGen || d.Core.ViewChanged()) && d.MayStep() {
		d.Orchestrate()
	}
	if d.Core.Settled() {
		return d.Publish()
	}
	return false
}

// MayStep reports whether the decision core may run now: not while a
// state is pending (its decisions would rest on what may be undone), and
// at most once a TickPeriod while writes fail (each pass could retry a
// write).
func (d *Driver) MayStep() bool {
	if !d.Core.Settled() {
		return false
	}
	return d.Core.PersistFailing() == nil || d.clk.Now().Sub(d.lastStep) >= TickPeriod
}

// Orchestrate runs the core's decision pass over the view of now: an
// incremental one when only the view changed since the last pass (the
// local dataset did not), else a full one.
func (d *Driver) Orchestrate() {
	if d.Core.Stopping() {
		return
	}
	viewOnly := d.gen == d.stepGen
	d.stepGen = d.gen
	d.lastStep = d.clk.Now()
	var began time.Time
	if d.Stopwatch != nil {
		began = d.Stopwatch.Now()
	}
	d.passes++
	d.Input(node.Pass{Now: d.lastStep, ViewOnly: viewOnly})
	if d.ObserveDecision != nil && d.Stopwatch != nil {
		d.ObserveDecision(d.Stopwatch.Now().Sub(began))
	}
	d.Apply()
}

// Passes is the number of decision passes run since the driver was made:
// a test's barrier (the node looked at the cluster that many times since),
// and a sign of life of the loop.
func (d *Driver) Passes() uint64 { return d.passes }

// Quiet reports whether the node acted on all it knows: no change of the
// local dataset or of the view waits for a decision pass, the dataset is
// sent, no state write is pending, no action of an instance runs, no
// wake-up is armed and no rule of the tick watches the clock (quorum,
// rejoin: Core.WatchesClock). A quiet node does nothing more until an
// input comes (a peer's data, an admin's request, a periodic check that
// finds a change): a test's barrier where the loop runs no pass because
// nothing changed.
func (d *Driver) Quiet() bool {
	return d.gen == d.stepGen && d.gen == d.published && !d.Core.ViewChanged() &&
		d.Core.Settled() && !d.Core.AnyBusy() && d.stepAt.IsZero() && !d.Core.WatchesClock()
}

// armWake arms the wake-up at t (the end of a ready window, a --wait
// deadline) unless an earlier one is armed. One that is due but not taken
// yet (Wake clears it) is kept: its timer fired while the loop took
// another input, and re-arming the timer for a later time would drop it.
func (d *Driver) armWake(t time.Time) {
	if t.IsZero() {
		return
	}
	if !d.stepAt.IsZero() && !t.Before(d.stepAt) {
		return
	}
	d.stepAt = t
	d.fx.ArmWake(t)
}

// WakeAt is when the driver must be woken (zero: not armed).
func (d *Driver) WakeAt() time.Time { return d.stepAt }

// Wake is the wake-up timer's end: the core runs a pass at the next Pass.
func (d *Driver) Wake() {
	d.stepAt = time.Time{}
	d.Input(node.Woken{})
}

// Start is the start of the daemon's loop: the core enters rejoin (with
// peers), then what it asks is carried out.
func (d *Driver) Start() { d.Step(node.Started{Now: d.clk.Now()}) }

// Tick is the periodic tick: while writes fail the state is written again
// (the node recovers as soon as the disk does), then the periodic checks,
// rejoin, the peers' status that changes with time alone, the safety-net
// pass.
func (d *Driver) Tick() {
	d.Step(node.RetryWrite{})
	d.Step(node.Ticked{Now: d.clk.Now()})
}

// BeginStop is the stop of the daemon ("stop", "restart", "shutdown").
func (d *Driver) BeginStop(mode string) { d.Step(node.Stopping{Mode: mode, Now: d.clk.Now()}) }

// ActionDone is the end of an action the core ordered.
func (d *Driver) ActionDone(svc, kind string, err error) {
	d.Step(node.Acted{Service: svc, Kind: kind, Err: err, Now: d.clk.Now()})
}

// CheckNow orders a full status check of svc.
func (d *Driver) CheckNow(svc string) { d.Step(node.CheckOrdered{Service: svc}) }

// CheckDone is the end of a status check the core ordered.
func (d *Driver) CheckDone(ck node.Check, res map[string]dataset.Resource) {
	d.checks++
	d.Step(node.Checked{Check: ck, Resources: res, Now: d.clk.Now()})
}

// Checks is the number of status checks ended since the driver was made:
// a test's barrier (the node looked at its instances that many times
// since; a check is an input that may act, as a restart ladder's).
func (d *Driver) Checks() uint64 { return d.checks }
