package node

import (
	"maps"
	"slices"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/monitor"
	"haven/node/configdist"
)

// Config distribution: the service configs, their versions and tombstones.
//
// Every config installed here has a logical version (State's
// ConfigVersion: this node's Lamport counter and origin), the digest of
// its content and its lineage (ConfigIncludes); a deleted service leaves a
// tombstone (State.Tombstones) so that older copies still travelling never
// resurrect it. Every node announces what it holds (ConfigEntries, in the
// heartbeats) and installs a peer's entry that wins over its own
// (dataset.ConfigEntry.Wins: the newer version, then the higher digest),
// so that concurrent edits resolve the same way everywhere.
//
// The core decides; the driver writes. A config to install or a file to
// remove comes in Ready.Configs; the driver writes it (the daemon
// atomically, then rebuilds the instance), in order, and reports it with
// configDone. Only then does the state record the new version (the file
// is on disk before the state that names its digest: a crash between the
// two leaves a file the start-up check (LocalFileRead) adopts as a new
// version) and only once that state is written are the requests answered.
//
// An edit accepted here (set, unset, create, edit config: editConfig) is
// answered only when every live peer announces a config that descends
// from it (ConfigEntry.IncludesEdit), or fails after ConfirmTimeout. When
// a concurrent version from another node wins over it, a keyword edit is
// applied again on top of the winner as a new version (a rebase, at most
// maxRebases times); a whole-file edit cannot be merged and fails:
// "changed concurrently on NODE, retry" (exit 1). An acknowledged edit is
// thus in the content every live node holds.
//
// This works because this node's current config always includes every
// edit pending here: an edit is applied on top of the current config, and
// when a peer's version wins, the pending edits it lacks are re-applied at
// once. So any version this node makes while an edit is pending includes
// the edit, and a peer's config whose lineage holds such a version
// (Includes[this node] >= the edit's counter) includes it too.

// maxRebases bounds how many times one keyword edit is re-applied on top
// of concurrent versions before it fails as "changed concurrently".
const maxRebases = 10

// ConfigRequest is an edit of a service config made on this node: Config
// is the new config, parsed and checked by the driver (create, replace,
// edit config; set and unset with Op and Kws, to apply them again on a
// concurrent version).
type ConfigRequest struct {
	Service string
	Config  *config.ServiceConfig
	// What says what it is: "created", "replaced", "changed".
	What string
	// Op is "set", "add" or "unset" for a keyword edit (Kws), "" for a
	// whole file.
	Op  string
	Kws []string
	Now time.Time
}

// confirmTimeout bounds the wait for the peers' adoption of an edit.
func (c *Core) confirmTimeout() time.Duration {
	if c.cfg.ConfirmTimeout > 0 {
		return c.cfg.ConfirmTimeout
	}
	return 10 * time.Second
}

// KnownConfig is the version, digest and lineage of the config of name
// this node holds, or is about to hold once the ConfigOps handed out are
// written (a tombstone counts), without its text.
func (c *Core) KnownConfig(name string) dataset.ConfigEntry {
	if op := c.cd.LastOp(name); op != nil {
		return op.Entry
	}
	return c.configOnDisk(name)
}

// configOnDisk is the entry the state records for name.
func (c *Core) configOnDisk(name string) dataset.ConfigEntry {
	if v, ok := c.state.Tombstones[name]; ok {
		return dataset.ConfigEntry{Version: v, Deleted: true, Sig: c.state.TombstoneSigs[name]}
	}
	ss := c.state.Services[name]
	return dataset.ConfigEntry{Version: ss.ConfigVersion, Digest: ss.ConfigDigest, Includes: ss.ConfigIncludes}
}

// ConfigEntries lists the configs and tombstones this node relays: the
// installed configs (Local.LocalServices, a config that does not parse
// here is not relayed) and the tombstones.
func (c *Core) ConfigEntries() map[string]dataset.ConfigEntry {
	svcs := c.cfg.Local.LocalServices()
	out := make(map[string]dataset.ConfigEntry, len(svcs)+len(c.state.Tombstones))
	for name, cfg := range svcs {
		e := c.configOnDisk(name)
		e.Raw = string(cfg.Raw)
		out[name] = e
	}
	for name, v := range c.state.Tombstones {
		out[name] = dataset.ConfigEntry{Version: v, Deleted: true, Sig: c.state.TombstoneSigs[name]}
	}
	return out
}

// newEntry makes the entry of an edit made on this node: a new version
// whose lineage is the current config's plus this edit.
func (c *Core) newEntry(name string, raw []byte) dataset.ConfigEntry {
	v := c.nextVersion()
	inc := map[string]uint64{}
	for o, n := range c.KnownConfig(name).Includes {
		inc[o] = n
	}
	inc[c.cfg.Name] = v.Counter
	return dataset.ConfigEntry{Version: v, Digest: dataset.ConfigDigest(raw), Includes: inc}
}

// checkLocalFile compares a config file read at start-up with the digest
// recorded for its version. A file that differs was changed outside Haven
// (a hand edit, a restored backup, or a crash between the write of the
// file and that of its version): the file on disk wins, as a hand edit
// would, and gets a new version so that every node converges on it.
func (c *Core) checkLocalFile(name string, raw []byte) {
	ss, known := c.state.Services[name]
	dig := dataset.ConfigDigest(raw)
	switch {
	case ss.ConfigDigest == dig:
		return
	case known && ss.ConfigDigest == "" && !ss.ConfigVersion.IsZero():
		// recorded before versions carried a digest: adopt it as is
		ss.ConfigDigest = dig
	default:
		e := c.newEntry(name, raw)
		c.emit(ConfigChangedOutside{Svc: name, Old: ss.ConfigVersion, Version: e.Version.Counter})
		ss.ConfigVersion, ss.ConfigDigest, ss.ConfigIncludes = e.Version, e.Digest, e.Includes
		ss.Previous = nil // the text it replaced is gone: no rollback to an older one
		c.dropTombstone(name)
	}
	c.state.Services[name] = ss
	c.persist()
}

// order hands a ConfigOp out.
func (c *Core) order(op *configdist.Op) {
	if op.Cfg != nil {
		if last := c.cd.LastOp(op.Svc); last != nil {
			if last.Cfg != nil {
				op.Prev, op.PrevRun = last.Cfg.Raw, last.Cfg.RunDigest
			}
		} else if cur := c.cfg.Local.LocalServices()[op.Svc]; cur != nil {
			op.Prev, op.PrevRun = cur.Raw, cur.RunDigest
		}
	}
	c.cd.Order(op)
	c.ready.Configs = append(c.ready.Configs, ConfigOp{Service: op.Svc, Config: op.Cfg, What: op.What})
}

// editConfig installs an edit made here (ConfigRequest) as a new version.
// Its ticket is answered once the config and the state are written and
// every live peer holds it (at once without peers), or with the cause.
func (c *Core) editConfig(req ConfigRequest) Ticket {
	tk := c.newTicket()
	if err := c.vb.Err(c.state.Lamport, req.Now); err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return tk
	}
	if err := c.configTexts().check(req.Service, len(req.Config.Raw)); err != nil {
		c.answer(Answer{Ticket: tk, Err: failedf("refused: %v", err)})
		return tk
	}
	if err := c.serialRefused(req.Config); err != nil {
		c.answer(Answer{Ticket: tk, Err: err, Bad: true})
		return tk
	}
	e := c.newEntry(req.Service, req.Config.Raw)
	c.order(&configdist.Op{Svc: req.Service, Cfg: req.Config, Entry: e, What: req.What,
		Edit: &configdist.Edit{Ticket: tk, Op: req.Op, Kws: req.Kws, Counter: e.Version.Counter}})
	return tk
}

// deleteService deletes svc everywhere: this node's instance is stopped if
// it runs, then the config removed and a tombstone left, which travels
// with the heartbeats. It is refused while the service runs on another
// node whose daemon is heard (stop it first), or when the local stop
// fails; a node that is down stops its instance when the tombstone
// reaches it.
func (c *Core) deleteService(svc, sig string, now time.Time) Ticket {
	tk := c.newTicket()
	if err := c.deletionRefused(svc, sig); err != nil {
		c.answer(Answer{Ticket: tk, Err: err, Bad: true})
		return tk
	}
	snap := c.Snapshot(now)
	var elsewhere []string
	for _, n := range snap.ClusterNodes {
		v, ok := snap.Nodes[n]
		if n == c.cfg.Name || !ok || !v.Alive() {
			continue
		}
		if i, ok := v.Data.Services[svc]; ok {
			if a := monitor.EffectiveAvail(i); a == dataset.StatusUp || a == dataset.StatusWarn {
				elsewhere = append(elsewhere, n)
			}
		}
	}
	if len(elsewhere) > 0 {
		c.answer(Answer{Ticket: tk, Err: failedf("not deleted: it runs on %s (stop it first: svcmgr -s %s stop --wait)", strings.Join(elsewhere, ", "), svc)})
		return tk
	}
	if err := c.vb.Err(c.state.Lamport, now); err != nil {
		c.answer(Answer{Ticket: tk, Err: err})
		return tk
	}
	c.removeService(svc, c.nextVersion(), sig, tk, now)
	return tk
}

// removeService stops the local instance if it runs, then removes the
// config and leaves a tombstone at version v, signed sig (or ""). tk (0
// for a deletion heard from a peer) gets the result. The private dir
// {var} is kept.
func (c *Core) removeService(name string, v dataset.Version, sig string, tk Ticket, now time.Time) {
	inst := c.insts[name]
	_, running := c.Status(name)
	if inst != nil && tk == 0 && inst.Mon.State == dataset.StopFailed && running {
		// a deletion heard from a peer: its stop failed here already; it
		// is not run again on every heartbeat, the admin clears it
		return
	}
	if inst == nil || !inst.Local || !inst.Spec.Runnable || !running {
		c.order(&configdist.Op{Svc: name, Entry: dataset.ConfigEntry{Version: v, Deleted: true, Sig: sig}, Ticket: tk})
		return
	}
	atk, err := c.runAction(name, "stop", "service deleted", now)
	if err != nil {
		if tk != 0 {
			c.answer(Answer{Ticket: tk, Err: failedf("not deleted: the stop failed: %v", err)})
		}
		return
	}
	c.cd.AwaitStop(atk, configdist.Deletion{Svc: name, V: v, Ticket: tk, Sig: sig})
}

// deleteStopped ends the stop a deletion ran (tk its ticket): the config
// is removed once it succeeded. It reports whether tk was a deletion's.
func (c *Core) deleteStopped(tk Ticket, err error) bool {
	del, ok := c.cd.Stopped(tk)
	if !ok {
		return false
	}
	if err != nil {
		if del.Ticket != 0 {
			c.answer(Answer{Ticket: del.Ticket, Err: failedf("not deleted: the stop failed: %v", err)})
		}
		return true
	}
	c.order(&configdist.Op{Svc: del.Svc, Entry: dataset.ConfigEntry{Version: del.V, Deleted: true, Sig: del.Sig}, Ticket: del.Ticket})
	return true
}

// configDone reports the end of the first ConfigOp of svc handed out and
// not reported: err nil once the file is written (or removed) and the
// instance rebuilt (or forgotten). The state records it then.
func (c *Core) configDone(svc string, err error, now time.Time) {
	op := c.cd.Done(svc)
	if op == nil {
		return
	}
	if err != nil || op.Cfg == nil {
		// a peer's entry that lost to this op may win again (a removal
		// that succeeded forgets the service: bumped too)
		c.bumpMergeEra()
	}
	switch {
	case op.Cfg == nil:
		c.removed(op, err)
	case err != nil:
		c.installFailed(op, err)
	default:
		c.installed(op, now)
	}
	if !c.cd.Busy(svc) {
		c.checkPending(svc, now)
	}
}

// ConfigBusy reports whether a write of the config of svc is handed out
// and not reported: a request that reads the config (to edit it) waits
// until it is not, so that it reads the newest content, which holds every
// edit pending here.
func (c *Core) ConfigBusy(svc string) bool { return c.cd.Busy(svc) }

func (c *Core) removed(op *configdist.Op, err error) {
	name := op.Svc
	if err != nil {
		if op.Ticket != 0 {
			c.answer(Answer{Ticket: op.Ticket, Err: failedf("remove config: %v", err)})
		}
		return
	}
	c.failPending(name, failedf("%s: deleted meanwhile", name))
	delete(c.state.Services, name)
	if c.state.Tombstones == nil {
		c.state.Tombstones = map[string]dataset.Version{}
	}
	c.state.Tombstones[name] = op.Entry.Version
	c.noteTombstoneSig(name, op.Entry.Sig)
	c.persist()
	c.publish()
	c.emit(ConfigChanged{Svc: name, Change: "deleted"})
	if op.Ticket != 0 {
		c.answer(Answer{Ticket: op.Ticket, Result: "deleted"})
	}
}

func (c *Core) installFailed(op *configdist.Op, err error) {
	switch {
	case op.Edit != nil:
		c.answer(Answer{Ticket: op.Edit.Ticket, Err: failedf("install: %v", err)})
	case len(op.Redo) > 0:
		for _, p := range op.Redo {
			c.finishEdit(op.Svc, p, failedf("%s: changed concurrently on %s, and the change no longer applies (install: %v): retry", op.Svc, op.From, err))
		}
	default:
		c.emit(ConfigInstallFailed{Svc: op.Svc, From: op.From, Err: err.Error()})
	}
}

// installed records a config written: its version, digest and lineage,
// then what follows: a local edit waits for the peers, a peer's config
// gets the edits pending here applied again.
func (c *Core) installed(op *configdist.Op, now time.Time) {
	name := op.Svc
	known := c.known(name)
	ss := c.state.Services[name]
	dig := dataset.ConfigDigest(op.Cfg.Raw)
	keepPrevious(&ss, op.Prev, dig)
	if ss.RunDigest != "" && ss.RunDigest == ss.ConfigDigest && op.Prev != nil && dataset.ConfigDigest(op.Prev) == ss.ConfigDigest &&
		op.PrevRun != "" && op.PrevRun == op.Cfg.RunDigest {
		// the instance runs the config replaced, which differs from this
		// one only by keywords that orchestrate (config.OrchestrationKeywords):
		// it runs this one as well
		ss.RunDigest = dig
	}
	ss.ConfigVersion, ss.ConfigDigest, ss.ConfigIncludes = op.Entry.Version, dig, op.Entry.Includes
	noteSerial(&ss, op.Cfg)
	c.state.Services[name] = ss
	c.cd.Restored(name)
	c.dropTombstone(name)
	c.persist()
	c.publish()
	c.emit(ConfigChanged{Svc: name, Change: "config " + op.What})
	switch {
	case op.Edit != nil:
		op.Edit.Deadline = now.Add(c.confirmTimeout())
		c.cd.AwaitPeers(name, op.Edit)
	case len(op.Redo) > 0:
		c.emit(ConfigRebased{Svc: name, From: op.From, Edits: len(op.Redo), Version: op.Entry.Version.Counter})
	case op.From != "":
		if !known {
			// a service new here: the targets and clears heard for it
			// before it was known are adopted now
			c.remerge(name, now)
		}
		c.rebasePending(name, op.From, op.Cfg.Raw)
	}
}

// remerge merges the peers' targets and clears of svc again.
func (c *Core) remerge(svc string, now time.Time) {
	for _, pn := range c.pv.Pnames {
		d := c.pv.Peers[pn].Data
		if d == nil {
			continue
		}
		if t, ok := d.Targets[svc]; ok {
			c.mergeTargets(pn, map[string]dataset.Target{svc: t}, now, func() monitor.Snapshot { return c.Snapshot(now) })
		}
		if cr, ok := d.Clears[svc]; ok {
			c.mergeClears(pn, map[string]dataset.ClearRequest{svc: cr}, now)
		}
		c.mergeRollouts(pn, d.Services, map[string]bool{svc: true}, now)
	}
}

// mergeConfigs installs the configs of a peer that win over ours. Every
// node applies the same rule (dataset.ConfigEntry.Wins: the newest
// version, then the higher digest), so concurrent edits resolve the same
// way everywhere. The driver has dropped the entries whose names are not
// valid.
func (c *Core) mergeConfigs(from string, entries map[string]dataset.ConfigEntry, now time.Time) {
	if c.cfg.Configs == nil {
		return
	}
	parsed := 0
	var texts *configTexts // once needed
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		if err := e.Sane(); err != nil {
			c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Err: err.Error()})
			continue
		}
		if err := c.vb.Check(e.Version, now); err != nil {
			c.sayRefused("config", name, from, e.Version, err) // not c.refuse: tried again once the clock reached it
			continue
		}
		c.witness(e.Version)
		cur := c.KnownConfig(name)
		restore := c.restoreWanted(name, e, cur) && !c.cd.Busy(name) // once
		if !e.Wins(cur) && !restore {
			continue
		}
		if c.cd.RefusedBefore(name, e.Version) {
			continue
		}
		if e.Deleted {
			if err := c.deletionRefused(name, e.Sig); err != nil {
				c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Err: err.Error(), Kept: true, Deletion: true})
				continue
			}
			c.emit(ConfigDeletedByPeer{Svc: name, From: from})
			c.failPending(name, failedf("%s: deleted concurrently on %s", name, from))
			c.removeService(name, e.Version, e.Sig, 0, now)
			continue
		}
		if err := config.ValidServiceName(name); err != nil {
			c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Err: err.Error()})
			continue
		}
		if texts == nil {
			texts = c.configTexts()
		}
		if err := texts.check(name, len(e.Raw)); err != nil {
			c.sayRefused("config", name, from, e.Version, err) // tried again at the next merge: a config may be deleted meanwhile
			continue
		}
		cost := c.mergeCost(len(e.Raw))
		if parsed > 0 && parsed+cost > mergeBudget {
			c.mergeSpent(from) // in a later turn (mergeMore); every version is witnessed now
			continue
		}
		parsed += cost
		if dig := dataset.ConfigDigest([]byte(e.Raw)); e.Digest != dig {
			if e.Digest != "" {
				c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Digest: true})
				continue
			}
			e.Digest = dig // a peer of a build without digests
		}
		cfg, err := c.cfg.Configs.ParseService(name, []byte(e.Raw))
		if err != nil {
			// keep the last good config; log once per version
			c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Err: err.Error(), Kept: true})
			continue
		}
		if err := c.serialRefused(cfg); err != nil {
			c.refuse(name, e.Version, ConfigRefused{Svc: name, From: from, Err: err.Error(), Kept: true})
			continue
		}
		if e.Version == cur.Version && !cur.Deleted && !restore {
			c.emit(ConfigConflict{Svc: name, From: from, Version: e.Version.Counter, Origin: e.Version.Origin,
				Digest: e.Digest[:12], Ours: shortDigest(cur.Digest)})
		}
		e.Raw = ""
		texts.set(name, len(cfg.Raw))
		what := "received from " + from
		if restore {
			what = "taken back from " + from + " (the file here was refused)"
		}
		c.order(&configdist.Op{Svc: name, Cfg: cfg, Entry: e, What: what, From: from})
	}
}

func (c *Core) refuse(name string, v dataset.Version, e ConfigRefused) {
	c.cd.Refuse(name, v)
	c.emit(e)
}

func shortDigest(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// mergeMore goes on with the peers' configs left over by the budget of
// mergeConfigs, from the copies of the peers held now. It returns whether
// some are still left (call it again, in a later turn).
func (c *Core) mergeMore(now time.Time) bool {
	for _, pn := range c.pv.Pnames {
		if !c.cd.TakeLeftOver(pn) {
			continue
		}
		if p := c.pv.Peers[pn]; p != nil && p.Data != nil {
			c.mergeConfigs(pn, p.Data.Configs, now)
		}
	}
	c.checkEdits(now)
	return c.ConfigMergesLeft()
}

// keepPrevious records in ss the text prev that a config of digest dig
// replaces: the current config of ss, unless the text handed out is not
// it (an install failed in between): then none is kept rather than an
// older one. A config installed again (same digest) keeps it as is.
func keepPrevious(ss *ServiceState, prev []byte, dig string) {
	if ss.ConfigDigest == dig && dig != "" {
		return
	}
	pd := ""
	if prev != nil {
		pd = dataset.ConfigDigest(prev)
	}
	switch {
	case pd == "" || pd == dig:
		ss.Previous = nil
	case ss.ConfigDigest != "" && pd != ss.ConfigDigest:
		ss.Previous = nil
	default:
		// the config recorded, or one installed without a version (a
		// file read at start-up that never had one)
		ss.Previous = &dataset.PrevConfig{Digest: pd, Raw: string(prev)}
	}
}
