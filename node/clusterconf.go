package node

import (
	"strings"
)

// The configuration every member must share (dataset.ClusterConf): each
// node announces a digest of it, and a node that finds a member whose
// digest differs from its own disables ha orchestration, as for
// incompatible versions (nothing starts by itself; admin actions still
// work), and says which member and which file, until they agree again.
// Two nodes naming different one-vote arbitrators (a move of the
// arbitrator half done) each got their own arbitrator's exclusive grant:
// after a cut of the link between them, both took the services.
//
// The last data heard of a member counts, up or down: a member seen with
// another configuration that then went silent may well run on its own
// idea of the quorum (that is the case above), so the mismatch holds
// until it is heard again with the same digest (a daemon restarted on
// the same files forgets a member never heard since). A member that
// announces no digest (a node of an earlier release: its data has no such
// field) is not checked: it is listed as unchecked (daemon status), and
// the rolling upgrade keeps ha on meanwhile.

// confVerdict says how the members that announce a digest differ from
// this node ("" when none does), and lists the members heard that
// announce none.
func (c *Core) confVerdict() (differs string, unchecked []string) {
	mine := c.cfg.ClusterConf
	if mine == nil {
		return "", nil
	}
	var diffs []string
	for _, name := range c.pv.Pnames {
		d := c.pv.Peers[name].Data
		switch {
		case d == nil:
		case d.Conf == nil:
			unchecked = append(unchecked, name)
		default:
			if parts := mine.Differs(d.Conf); len(parts) > 0 {
				diffs = append(diffs, name+": "+strings.Join(parts, ", "))
			}
		}
	}
	if len(diffs) == 0 {
		return "", unchecked
	}
	file := c.cfg.ClusterFile
	if file == "" {
		file = "cluster.toml"
	}
	return "the configuration of " + strings.Join(diffs, "; ") + " differs from this node's (" + file + ")", unchecked
}

// updateConf compares the members' configuration digests with this
// node's (on every heartbeat event: a member's data, up or down).
func (c *Core) updateConf() {
	why, _ := c.confVerdict()
	if why == c.pv.ConfDiffers {
		return
	}
	c.pv.ConfDiffers = why
	c.emit(ConfDiffer{OK: why == "", Reason: why})
	c.pv.ViewChanged = true
}

// ConfDiffers says which members' configuration differs from this node's
// ("" when none does): ha orchestration is disabled meanwhile.
func (c *Core) ConfDiffers() string { return c.pv.ConfDiffers }

// ConfUnchecked lists the members heard whose data announces no
// configuration digest (an earlier release).
func (c *Core) ConfUnchecked() []string {
	_, u := c.confVerdict()
	return u
}

// ConfDiffer: a member's configuration differs from this node's in what
// must agree (cluster.toml's members, quorum, arbitrators or fence
// commands, node.toml's hb.disk.fence), or agrees again.
type ConfDiffer struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

func (ConfDiffer) Kind() string    { return "cluster_conf" }
func (ConfDiffer) Service() string { return "" }
func (e ConfDiffer) Level() Level {
	if e.OK {
		return Info
	}
	return Error
}
func (e ConfDiffer) String() string {
	if e.OK {
		return "cluster members' configuration agrees again. enable ha orchestration"
	}
	return "cluster members' configuration differs: " + e.Reason + ". disable ha orchestration (the same cluster.toml on every node, then restart the daemons that read another)"
}
