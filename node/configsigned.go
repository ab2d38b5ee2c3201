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

// serialRefused refuses cfg, signed below the floor of its service here.
func (c *Core) serialRefused(cfg *config.ServiceConfig) error {
	s := cfg.Signature
	if s == nil {
		return nil
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
		if ss.ConfigSerial != 0 || ss.ConfigSerialFloor != 0 {
			ss.ConfigSerial, ss.ConfigSerialFloor = 0, 0
			c.state.Services[name] = ss
			changed = true
		}
	}
	if changed {
		c.persist()
	}
}
