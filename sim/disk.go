package sim

import (
	"errors"
	"fmt"
	"time"

	"haven/node"
)

// The simulated disk of a node's state (Node.dur): fast by default (a
// write is on disk when the core hands it out, in the same pass), or slow
// (each write takes a delay: the answers and actions resting on it are
// held until it ends, the changes made meanwhile wait for it and go in
// one write: group commit), or failing (a write fails when it ends: the
// core rolls back what was not written, fails the answers, aborts the
// actions, and writes again on every tick until the disk takes writes).
//
//	disk n1 slow 2s     each state write of n1 takes 2s
//	disk n1 fail        n1's state writes fail (read-only, full)
//	disk n1 ok          n1's disk is fast and good again

// diskState is how a node's disk behaves.
type diskState struct {
	delay time.Duration
	fail  bool
	// writes counts the states handed to the disk (encodes, in the daemon).
	writes int
}

// simWrite is a state write in flight.
type simWrite struct {
	seq uint64
	st  node.State
	at  time.Time
}

// errDiskFailed is the error of a failing simulated disk.
var errDiskFailed = errors.New("write state.json: read-only file system (simulated)")

// Disk sets how node's state disk behaves: "ok", "slow" (each write takes
// delay) or "fail".
func (c *Cluster) Disk(name, mode string, delay time.Duration) error {
	n, err := c.node(name)
	if err != nil {
		return err
	}
	switch mode {
	case "ok":
		n.disk.delay, n.disk.fail = 0, false
	case "slow":
		if delay <= 0 {
			return fmt.Errorf("disk %s slow: want a duration > 0", name)
		}
		n.disk.delay, n.disk.fail = delay, false
	case "fail":
		n.disk.fail = true
	default:
		return fmt.Errorf("disk %s: want ok, slow DURATION or fail", name)
	}
	c.logf(name, "", "state disk %s", mode)
	return nil
}

// Writes is the number of state writes node's daemons handed to its disk.
func (c *Cluster) Writes(name string) int { return c.nodes[name].disk.writes }

// saveState writes st numbered seq: at once on a fast good disk (true),
// else when its delay has passed (writesDone).
func (d *daemon) saveState(seq uint64, st *node.State) bool {
	n := d.n
	n.disk.writes++
	if n.disk.delay == 0 && !n.disk.fail {
		n.dur = st.Clone()
		d.c.noteDurable(d.name)
		return true
	}
	d.writes = append(d.writes, simWrite{seq: seq, st: st.Clone(), at: d.c.clk.Now().Add(n.disk.delay)})
	return false
}

// writesDone ends the writes whose delay has passed, in order: on disk,
// or failed (the core rolls back). It reports whether any ended.
func (d *daemon) writesDone() bool {
	now := d.c.clk.Now()
	did := false
	for len(d.writes) > 0 && !now.Before(d.writes[0].at) {
		w := d.writes[0]
		d.writes = d.writes[1:]
		did = true
		if d.n.disk.fail {
			d.c.logf(d.name, "", "state not saved: %v", errDiskFailed)
			d.drv.Persisted(w.seq, errDiskFailed)
			continue
		}
		d.n.dur = w.st
		d.c.noteDurable(d.name)
		d.drv.Persisted(w.seq, nil)
	}
	return did
}

// writeDue is when the write in flight ends (zero: none).
func (d *daemon) writeDue() time.Time {
	if len(d.writes) == 0 {
		return time.Time{}
	}
	return d.writes[0].at
}
