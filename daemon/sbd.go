package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/driver"
	"haven/heartbeat"
	"haven/heartbeat/disk"
	"haven/node"
)

// The disk heartbeat, its SBD-style fencing and the watchdog (node.toml
// [hb.disk] and node.watchdog_device; docs/operations.md "Disk heartbeat",
// "SBD-style fencing", "Watchdog").
//
// The disk's servant (heartbeat/disk) runs in goroutines of its own: a disk
// that blocks never blocks the loop. What it reports comes back to the loop
// with post, except a fence aimed at this node: its crash_command runs at
// once from the servant's side, so that a hung loop is fenced too.

// sbd is the daemon's share of the disk heartbeat and the watchdog.
type sbd struct {
	// disk is the open disk heartbeat (nil: none, or not open yet).
	disk *disk.Disk
	// lost: the disk had no good round for hb.disk.timeout (the loop's,
	// told to the core: node.DiskRead)
	lost bool
	// diskLost is the disk's last state, set by its servant (onDiskState)
	diskLost atomic.Bool
	wd       *watchdog
	// fence is the state of a fence this node obeys (fenceNone...), read
	// in fenceDisk; fenceStopAt is when its stops were last asked for
	fence       int
	fenceDisk   *disk.Disk
	fenceStopAt time.Time
	// fencing are the disk fences this node conducts, by target: each
	// ends the fence's wait when cancelled (abandonFences)
	fencing map[string]*diskFencing
	quit    chan struct{}
	done    chan struct{}
}

// pulsePeriod is the period of the loop's pulse: the watchdog's pets and
// the disk-lost check run on the loop this often.
const pulsePeriod = 500 * time.Millisecond

// startSBD opens the watchdog (an error stops the start: the node asked
// for one) and starts the disk heartbeat (opened in the background, again
// until it opens: a disk missing at start is logged and counted lost).
func (d *Daemon) startSBD() error {
	dk := d.node.HB.Disk
	if d.node.WatchdogDevice == "" && d.cluster.Quorum {
		for _, a := range d.cluster.Arbitrators {
			if strings.HasPrefix(a.URI, driver.OneVoteScheme) {
				d.log.Warn("a one-vote arbitrator ("+a.URI+") without node.watchdog_device: a survivor takes this node's services over once its lease ended plus its stop budget, and a daemon paused or hung that long leaves them running: set a watchdog (docs/operations.md)",
					zap.String("node", d.node.Name), zap.String("file", d.node.File))
				break
			}
		}
	}
	if dk.Path == "" && d.node.WatchdogDevice == "" {
		return nil
	}
	s := &sbd{quit: make(chan struct{}), done: make(chan struct{})}
	if d.node.WatchdogDevice != "" {
		wd, err := openWatchdog(d.node.WatchdogDevice, d.minFenceWait(), d.opts.WatchdogFile)
		if err != nil {
			// bad input: the file, the line and the key, exit status 2
			return d.node.ErrAt("node", "watchdog_device", "%s: %v", d.node.WatchdogDevice, err)
		}
		s.wd = wd
		d.log.Info("watchdog armed", zap.String("device", wd.path), zap.String("timeout", wd.timeoutText()))
	}
	d.sbd = s
	if dk.Fence && s.wd == nil {
		d.log.Warn("hb.disk.fence without node.watchdog_device: a survivor counts this node fenced once its slot stalls for the fence wait, and a daemon paused or hung that long leaves its services running: set a watchdog (docs/operations.md)",
			zap.String("node", d.node.Name), zap.String("file", d.node.File))
	}
	if dk.Path != "" {
		cfg := disk.Config{Path: dk.Path, Node: d.node.Name, Members: d.cluster.NodeNames(), Cluster: d.cluster.Name,
			Secret: d.cluster.Secret, NodeKey: d.keys.priv, MemberKeys: d.keys.pubs, NodeKeysMode: d.cluster.NodeKeysMode, Run: d.dur.Incarnation, Interval: config.DiskBeatPeriod(d.node.HB), Timeout: dk.Timeout,
			Clock: d.clk, Logger: d.log.Named("disk"), OnState: d.onDiskState, Guard: d.diskGuard()}
		if dk.Fence && cfg.Guard&disk.GuardStops == 0 {
			d.log.Warn("hb.disk.fence with split_action "+d.node.SplitAction+": this node does not stop by itself when it loses the disk and the majority, so the survivors never count it fenced by the stall of its slot: its services are taken over only once it acknowledged a fence (it read the fence and stopped them), or by a [stonith] command (docs/operations.md)",
				zap.String("node", d.node.Name), zap.String("file", d.node.File))
		}
		cfg.Liveness = diskLiveness(d.hb, dk.Fence)
		if cfg.Liveness == nil && !dk.Fence && d.hb != nil {
			d.log.Warn("the disk heartbeat is not counted as a link: this build's heartbeat has no NoteLinkAlive (the slots are written, read and logged only)",
				zap.String("path", dk.Path))
		}
		var dsk *disk.Disk
		cfg.OnFenced = func(f disk.Fence) { d.onDiskFence(dsk, f) }
		go func() {
			for {
				var err error
				if dsk, err = disk.New(cfg); err == nil {
					fields := []zap.Field{zap.String("path", dk.Path), zap.Int("slot", dsk.Slot()), zap.Bool("fence", dk.Fence), zap.Bool("o_direct", dsk.Direct())}
					if dsk.Direct() {
						d.log.Info("disk heartbeat started", fields...)
					} else {
						d.log.Warn("disk heartbeat started without O_DIRECT (the file system refused it): reads may come from this host's page cache, fine for a file shared by the processes of one host only", fields...)
					}
					dsk.Start()
					if !d.post(func() { d.sbd.disk = dsk; d.metrics.disk.Store(dsk) }) {
						dsk.Close(disk.StateStopped) // the daemon stopped meanwhile
					}
					return
				}
				if ce := (*disk.ConfigError)(nil); errors.As(err, &ce) {
					// the same files give the same refusal: not retried
					// (a daemon restart or reload with others tries again)
					d.log.Error("disk heartbeat not started: the configuration does not allow it", zap.String("path", dk.Path), zap.Error(err))
					d.onDiskState(false, err.Error())
					return
				}
				d.log.Error("disk heartbeat: cannot open the disk (retried)", zap.String("path", dk.Path), zap.Error(err))
				d.onDiskState(false, err.Error())
				select {
				case <-s.quit:
					return
				case <-d.clk.After(dk.Timeout):
				}
			}
		}()
	}
	go d.pulse(s)
	return nil
}

// splitStops reports whether split_action a stops the node's services
// (stop, crash, reboot): a node that applies it leaves nothing running.
func splitStops(a string) bool {
	return a == node.SplitStop || a == node.SplitCrash || a == node.SplitReboot
}

// diskGuard is what this run says in its disk beats of what it does by
// itself (disk.Config.Guard): it stops its services when it loses the
// fencing disk and the majority (the core's rule: node.DiskRead), and its watchdog resets
// a hung or paused daemon's host.
func (d *Daemon) diskGuard() byte {
	var g byte
	if d.node.HB.Disk.Fence && splitStops(d.node.SplitAction) {
		g |= disk.GuardStops
	}
	if d.sbd != nil && d.sbd.wd != nil {
		g |= disk.GuardWatchdog
	}
	return g
}

// minFenceWait is the shortest fence wait of a survivor fencing this node
// through the disk (diskFence: 2 x hb.disk.timeout + the self-stop
// deadline, whose stop budget only grows with the services), 0 when the
// disk does not fence: the watchdog must reset a paused host before it.
func (d *Daemon) minFenceWait() time.Duration {
	if !d.node.HB.Disk.Fence || d.node.HB.Disk.Path == "" {
		return 0
	}
	return 2*d.node.HB.Disk.Timeout + driver.QuorumConfig(d.node, d.cluster).Timing.Deadline()
}

// diskLiveness is what the disk tells of the peers' slots that advance:
// the heartbeat's NoteLinkAlive ("heard just now on link disk"), where the
// heartbeat has one, when the disk is one more link. With fence = true the
// disk is the fencing device instead: a node silent on every network is
// voted on and fenced through it, its slot does not keep it up.
func diskLiveness(hb heartbeat.Heartbeat, fence bool) disk.Liveness {
	if fence || hb == nil {
		return nil
	}
	if l, ok := hb.(disk.Liveness); ok {
		return l
	}
	return nil
}

// pulse posts onPulse to the loop every pulsePeriod, the next only once
// the last ran: a loop that is blocked (or a process paused) runs none,
// and the watchdog is not petted.
func (d *Daemon) pulse(s *sbd) {
	defer close(s.done)
	for {
		ran := make(chan struct{})
		if !d.post(func() { d.onPulse(); close(ran) }) {
			return
		}
		select {
		case <-ran:
		case <-s.quit:
			return
		}
		select {
		case <-d.clk.After(pulsePeriod):
		case <-s.quit:
			return
		}
	}
}

// onPulse runs on the loop: it pets the watchdog, acknowledges a fence
// obeyed, abandons the fences of peers heard again.
func (d *Daemon) onPulse() {
	s := d.sbd
	if s.wd != nil {
		if err := s.wd.pet(); err != nil {
			d.log.Error("watchdog: pet failed", zap.String("device", s.wd.path), zap.Error(err))
		}
	}
	d.checkFenceAck()
	d.abandonFences()
}

// diskFencing is a disk fence this node conducts (sbd.fencing).
type diskFencing struct{ cancel context.CancelFunc }

// abandonFences ends the disk fences of the peers heard again (up): the
// core closed their takeover gates, nothing waits for the fence any more,
// and a fence still announced would make the node, back and maybe thawed
// by an admin, obey it (freeze, crash_command) for nothing.
func (d *Daemon) abandonFences() {
	now := d.clk.Now()
	for target, f := range d.sbd.fencing {
		if d.core.PeerStatus(target, now) == dataset.NodeUp {
			f.cancel()
			delete(d.sbd.fencing, target)
			d.log.Warn("disk fence abandoned: the target is heard again (its takeover gate closed)", zap.String("target", target))
		}
	}
}

// onDiskState is the disk reachable or lost (from the servant, which
// never waits for the loop: the state is kept aside and the loop told to
// read it, so that a busy loop neither blocks the disk's rounds nor sees
// two changes in the wrong order).
func (d *Daemon) onDiskState(ok bool, _ string) {
	d.sbd.diskLost.Store(!ok) // d.sbd is set before the servant starts, never changed
	go d.post(d.syncDiskState)
}

// syncDiskState takes the disk's last state on the loop.
func (d *Daemon) syncDiskState() {
	s := d.sbd
	if s == nil {
		return
	}
	lost := s.diskLost.Load()
	if lost == s.lost {
		return
	}
	s.lost = lost
	// the core decides what a node without the disk does (split_action)
	d.drv.Step(node.DiskRead{Lost: lost, Now: d.clk.Now()})
}

// stopAllLocal freezes this node and stops every local instance that runs
// (a fence whose crash_command returned).
func (d *Daemon) stopAllLocal(reason string) {
	d.drv.Input(node.NodeFrozenSet{Frozen: true, Reason: reason + ": every local instance stopped, node frozen"})
	for _, name := range d.serviceNames() {
		if _, running := d.core.Status(name); running {
			d.drv.RunAction(name, "stop", reason, nil)
		}
	}
	d.applyReady()
}

// The fences this node obeys (sbd.fence, on the loop).
const (
	fenceNone     = iota
	fenceCrashing // its crash_command runs
	fenceStopping // it returned, the host is still up: every local instance is stopped
	fenceAcked    // none runs any more: the fences read are acknowledged
)

// fenceRestopEvery is how often a local instance still running after the
// stops of a fence (a stop failed) is stopped again.
const fenceRestopEvery = 5 * time.Second

// onDiskFence: a fence aimed at this run was read in this node's slot
// (called from the servant). The node freezes (it starts nothing any
// more) and its crash_command runs at once, outside the loop (a hung loop
// does not delay it). A command that returns (a harmless test command, a
// kernel that ignored the sysrq, a command that failed) left the host up
// and its services running: the daemon then stops every local instance,
// and the node's slot acknowledges the fence once none runs (onPulse), so
// that an acknowledgement always means "nothing runs here".
//
// node.toml is read at start only: its crash_command is read here, off
// the loop, as it was loaded.
func (d *Daemon) onDiskFence(dsk *disk.Disk, f disk.Fence) {
	reason := "fenced through the disk by " + f.Fencer
	cmdline := d.node.CrashCommand
	frozen := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), nodeActionTimeout)
		defer cancel()
		err := execNodeAction(ctx, cmdline)
		<-frozen // posted first: the loop froze the node before this
		d.post(func() {
			d.logEvent(node.NodeActionEnd{Action: node.NodeCrash, Err: errString(err)})
			s := d.sbd
			if s.fence != fenceCrashing {
				return
			}
			if !d.core.NodeFrozen() {
				// an admin thawed it meanwhile: not acknowledged (a live
				// node is not fenced by the stall either); a fence still
				// announced is obeyed anew
				s.fenceDisk.ResetFenced()
				s.fence = fenceNone
				d.log.Warn("thawed while the crash_command of a fence ran: the fence is not acknowledged, a fence still announced is obeyed anew", zap.String("fencer", f.Fencer))
				return
			}
			s.fence, s.fenceStopAt = fenceStopping, d.clk.Now()
			d.log.Warn("the crash_command of a fence returned and this host is still up: every local instance is stopped, then the fence is acknowledged", zap.String("fencer", f.Fencer), zap.Error(err))
			d.stopAllLocal(reason + ": crash_command returned")
		})
	}()
	go func() {
		d.post(func() {
			d.logEvent(node.NodeActionRun{Action: node.NodeCrash, Reason: reason})
			d.sbd.fence, d.sbd.fenceDisk = fenceCrashing, dsk
			d.drv.Input(node.NodeFrozenSet{Frozen: true, Reason: reason})
			d.applyReady()
		})
		close(frozen)
	}()
}

// checkFenceAck runs on the loop's pulse: a fence obeyed is acknowledged
// once the node is frozen and no local instance runs or is busy (an
// instance still running and idle, its stop failed, is stopped again
// every fenceRestopEvery); a node thawed after its fence (an admin's
// thaw) obeys the next fence anew instead of acknowledging it at once.
func (d *Daemon) checkFenceAck() {
	s := d.sbd
	if s.fence == fenceNone || s.fence == fenceCrashing {
		return
	}
	if !d.core.NodeFrozen() {
		s.fenceDisk.ResetFenced()
		s.fence = fenceNone
		d.log.Info("thawed after a fence through the disk: a later fence is obeyed anew")
		return
	}
	if s.fence != fenceStopping {
		return
	}
	var left []string
	restop := false
	for _, name := range d.serviceNames() {
		if _, running := d.core.Status(name); running || d.core.Busy(name) != "" {
			left = append(left, name)
			restop = restop || running && d.core.Busy(name) == ""
		}
	}
	now := d.clk.Now()
	switch {
	case len(left) == 0:
		s.fence = fenceAcked
		s.fenceDisk.Ack()
		d.log.Warn("fence through the disk acknowledged: this node is frozen and no local instance runs")
	case restop && now.Sub(s.fenceStopAt) >= fenceRestopEvery:
		s.fenceStopAt = now
		d.log.Error("a fence through the disk is not acknowledged: local instances still run after their stop", zap.Strings("services", left))
		d.stopAllLocal("fenced through the disk: stop again")
	}
}

// diskFence fences target through the disk for the core's Fence, when
// the disk fences it (fence = true, no [stonith.NODE] command): a worker
// waits for the fence's end and reports it with node.FenceEnded. It reports
// false when the disk does not fence target.
func (d *Daemon) diskFence(target string) bool {
	if d.sbd == nil || !d.node.HB.Disk.Fence {
		return false
	}
	now := d.clk.Now()
	// the stall the fence waits for: longer than the target's own
	// reaction to a lost disk (its hb.disk.timeout, one more for the
	// round it lost it in) and its split_action (the self-stop deadline)
	wait := 2 * d.node.HB.Disk.Timeout
	if qi := d.core.QuorumInfo(now); qi != nil {
		for _, g := range qi.Gates {
			if g.Node == target {
				wait += g.Deadline.Sub(g.Since)
			}
		}
	}
	dsk := d.sbd.disk
	if dsk == nil {
		d.post(func() {
			d.drv.Step(node.FenceEnded{Node: target, Err: fmt.Errorf("disk fence: the disk %s is not open", d.node.HB.Disk.Path), Now: d.clk.Now()})
		})
		return true
	}
	o := d.diskFenceOpts(target, wait)
	d.log.Warn("fencing through the disk", zap.String("target", target), zap.String("stall_wait", wait.String()),
		zap.Uint64("network_run", o.Run), zap.Bool("network_says_it_stops", o.Stops))
	fctx, fcancel := context.WithCancel(d.actx)
	fencing := &diskFencing{cancel: fcancel}
	if d.sbd.fencing == nil {
		d.sbd.fencing = map[string]*diskFencing{}
	}
	if old := d.sbd.fencing[target]; old != nil {
		old.cancel()
	}
	d.sbd.fencing[target] = fencing
	d.goWorker(func(context.Context) {
		ctx, cancel := context.WithTimeout(fctx, wait+4*d.node.HB.Disk.Timeout)
		defer cancel()
		how, err := dsk.Fence(ctx, target, o)
		d.post(func() {
			if d.sbd.fencing[target] == fencing {
				delete(d.sbd.fencing, target)
			}
			fcancel()
			if err == nil {
				d.log.Warn("disk fence done", zap.String("target", target), zap.String("how", how))
				how = "fenced through the disk: " + how
			}
			d.drv.Step(node.FenceEnded{Node: target, How: how, Err: err, Now: d.clk.Now()})
		})
	})
	return true
}

// diskFenceOpts are the terms of the disk fence of target (on the loop):
// what the network says of it, the run its beats last came from (the run
// fenced when the disk showed none of it: a block of an earlier run says
// nothing of it) and whether its data says it stops by itself (its
// split_action, as the quorum's self-stop deadline trusts it).
func (d *Daemon) diskFenceOpts(target string, wait time.Duration) disk.FenceOpts {
	o := disk.FenceOpts{Wait: wait}
	if d.hb != nil {
		for _, p := range d.hb.Peers() {
			if p.Name == target {
				o.Run = p.Run
			}
		}
	}
	if p, ok := d.core.Peer(target); ok && p.Data != nil {
		o.Stops = splitStops(p.Data.SplitAction)
	}
	return o
}

// stopSBD ends the pulse, writes the disk's last beat (the daemon stopped
// on purpose: "shutdown" stopped the services, "stop" may have left them
// running) and disarms the watchdog with the magic close.
func (d *Daemon) stopSBD(mode string) {
	s := d.sbd
	if s == nil {
		return
	}
	close(s.quit)
	<-s.done
	if s.disk != nil {
		state := byte(disk.StateStopped)
		if mode == "shutdown" {
			state = disk.StateShutdown
		}
		if err := s.disk.Close(state); err != nil {
			d.log.Warn("disk heartbeat: last beat not written", zap.Error(err))
		}
	}
	if s.wd != nil {
		if err := s.wd.disarm(); err != nil {
			d.log.Error("watchdog: magic close failed: the host may be reset", zap.String("device", s.wd.path), zap.Error(err))
		} else {
			d.log.Info("watchdog disarmed", zap.String("device", s.wd.path))
		}
	}
}
