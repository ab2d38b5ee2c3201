package node

import (
	"fmt"

	"haven/config"
	"haven/dataset"
)

// Admin-signed configs in the core (docs/security.md, "Admin-signed
// configs"). The driver checks a config's signature when it parses it
// (config.SignatureCheck: unsigned, bad signature, unknown key) and gives
// the core a config whose Signature is set; the core holds what needs the
// durable state: the serials.
//
// Replays: a signed config stays valid forever, so a member could send an
// older signed config of a service again, under a new version that wins.
// Each node records the highest serial it installed for a service
// (ConfigSerial) and the serial of the config that one replaced
// (ConfigSerialFloor), and refuses a signed config below the floor: the
// cluster can go back one config (a rollback to the previous text, signed
// with the previous serial), never further.

// serialRefused refuses cfg, signed below the floor of its service here,
// or, for a service deleted here by an admin's signed deletion, below the
// deletion's serial (a config signed before the deletion, sent again to
// bring the service back).
func (c *Core) serialRefused(cfg *config.ServiceConfig) error {
	s := cfg.Signature
	if s == nil {
		return nil
	}
	if d, ok := c.deletionSerial(cfg.Name); ok && s.Serial < d {
		return &config.SignatureError{File: cfg.File, Reason: config.SigReplayed,
			Msg: fmt.Sprintf("serial %d is below %d, the serial of the admin's deletion of %s: a config signed before the service was deleted (an admin signs it again: svcmgr sign)", s.Serial, d, cfg.Name)}
	}
	ss := c.state.Services[cfg.Name]
	if s.Serial < ss.ConfigSerialFloor {
		return &config.SignatureError{File: cfg.File, Reason: config.SigReplayed,
			Msg: fmt.Sprintf("serial %d is below %d, the serial of the config before the newest one installed here (%d): an older signed config sent again (an admin signs a newer one with a serial above %d)",
				s.Serial, ss.ConfigSerialFloor, ss.ConfigSerial, ss.ConfigSerial)}
	}
	return nil
}

// noteSerial records the serial of cfg, installed, in ss.
func noteSerial(ss *ServiceState, cfg *config.ServiceConfig) {
	if s := cfg.Signature; s != nil && s.Serial > ss.ConfigSerial {
		ss.ConfigSerialFloor, ss.ConfigSerial = ss.ConfigSerial, s.Serial
	}
}

// restoreWanted reports whether a peer's entry e is the content recorded
// here for the version cur of a service whose file here was refused for
// its signature: installed again, it puts back the last good config.
func (c *Core) restoreWanted(name string, e, cur dataset.ConfigEntry) bool {
	return c.cd.Restoring(name) && !e.Deleted && !cur.Deleted && e.Version == cur.Version && e.Digest == cur.Digest
}

// forgetSerials drops the serials of every service: configs are not
// signed (admin keys removed), so no replay rule holds, and a state
// without them is one the previous release reads.
func (c *Core) forgetSerials() {
	changed := false
	for name, ss := range c.state.Services {
		if ss.Serials != (Serials{}) {
			ss.Serials = Serials{}
			c.state.Services[name] = ss
			changed = true
		}
	}
	if changed {
		c.persist()
	}
}

// Admin-signed deletions and targets (docs/security.md, "Admin-signed
// deletions and targets"). With [admin_keys], a peer's tombstone and a
// peer's target that asks the nodes to act (dataset.Target.Active: start,
// stop, freeze, thaw, placed; a flex node's start or stop) are taken only
// with an admin's signature (config.VerifyDeletion, VerifyTarget); a
// target that asks for nothing (none: reached; aborted) is the core's own
// and stays unsigned: it ends the orchestration of a target, and never
// makes an instance act. A node's own freeze is not a target.
//
// Replays: a deletion's serial must be above the serial of the config it
// deletes here (ConfigSerial), so an old deletion sent again never deletes
// a service created again since; its serial then stays with the tombstone
// (State.TombstoneSigs) as the floor of a config that brings the service
// back. A signed target's serial must be above the highest taken here for
// the service (TargetSerial).
//
// The feature level gates it: a release of format 1 knows no signed
// orders (it cannot sign them, nor hold [admin_keys]), so they are
// required once the cluster feature level is 2, when every member runs a
// release that makes them; until then a peer's orders are taken as
// before (what `nodemgr daemon status` and the docs say of a rolling
// upgrade).

// ordersSigned reports whether a deletion and an active target need an
// admin's signature here.
func (c *Core) ordersSigned() bool { return c.cfg.Admin.On() && c.FeatureLevel() >= 2 }

// deletionRefused refuses the deletion of name signed sig (a peer's
// tombstone, or an admin's request here).
func (c *Core) deletionRefused(name, sig string) error {
	if err := config.OrderSigTooLong("deletion", sig); err != nil || !c.ordersSigned() {
		return err
	}
	s, err := c.cfg.Admin.Deletion(sig, name)
	if err != nil {
		return err
	}
	if ss, ok := c.state.Services[name]; ok && s.Serial <= ss.ConfigSerial {
		return &config.OrderError{What: "deletion", Reason: config.SigReplayed,
			Msg: fmt.Sprintf("serial %d is not above %d, the serial of the config of %s installed here: a deletion older than the config (sent again after the service was created again)", s.Serial, ss.ConfigSerial, name)}
	}
	return nil
}

// deletionSerial is the serial of the admin's deletion of name, while the
// service is deleted here.
func (c *Core) deletionSerial(name string) (uint64, bool) {
	sig, ok := c.state.TombstoneSigs[name]
	if !ok {
		return 0, false
	}
	if _, tomb := c.state.Tombstones[name]; !tomb {
		return 0, false
	}
	_, serial, _, err := config.ParseOrderSig(sig)
	return serial, err == nil
}

// noteTombstoneSig records the signature of the tombstone of name.
func (c *Core) noteTombstoneSig(name, sig string) {
	if sig == "" {
		delete(c.state.TombstoneSigs, name)
		return
	}
	if c.state.TombstoneSigs == nil {
		c.state.TombstoneSigs = map[string]string{}
	}
	c.state.TombstoneSigs[name] = sig
}

// dropTombstone forgets the tombstone of name (a config installed).
func (c *Core) dropTombstone(name string) {
	delete(c.state.Tombstones, name)
	delete(c.state.TombstoneSigs, name)
}

// targetRefused refuses t, a target of svc (a peer's, or an admin's
// request here), for its signature; ss is the service's state here.
func (c *Core) targetRefused(svc string, t dataset.Target, ss ServiceState) error {
	if err := config.OrderSigTooLong("target", t.Sig); err != nil || !c.ordersSigned() || !t.Active() {
		return err
	}
	s, err := c.cfg.Admin.Target(t.Sig, svc, t.Expect, t.Node)
	if err != nil {
		return err
	}
	if s.Serial <= ss.TargetSerial {
		return &config.OrderError{What: "target", Reason: config.SigReplayed,
			Msg: fmt.Sprintf("serial %d is not above %d, the serial of the newest admin target of %s taken here: an older target sent again (an admin signs a new one)", s.Serial, ss.TargetSerial, svc)}
	}
	return nil
}

// noteTargetSerial raises the target floor of ss to the serial of t.
func noteTargetSerial(ss *ServiceState, t dataset.Target) {
	if t.Sig == "" {
		return
	}
	if _, serial, _, err := config.ParseOrderSig(t.Sig); err == nil && serial > ss.TargetSerial {
		ss.TargetSerial = serial
	}
}

// TargetRefused: a peer's target of a service is not taken here for its
// admin signature (unsigned, bad, unknown key, replayed): nothing acts on
// it, the target known here stays.
type TargetRefused struct {
	Svc    string         `json:"svc"`
	From   string         `json:"from"`
	Target dataset.Target `json:"target"`
	Err    string         `json:"error"`
}

func (TargetRefused) Kind() string      { return "target_refused" }
func (e TargetRefused) Service() string { return e.Svc }
func (TargetRefused) Level() Level      { return Error }
func (e TargetRefused) String() string {
	return fmt.Sprintf("target %s (id %s) from %s refused: %s", e.Target.String(), e.Target.ID, e.From, e.Err)
}
