package daemon

import (
	"haven/dataset"
)

// targets lists the admin targets this node knows, for the heartbeats.
func (d *Daemon) targets() map[string]dataset.Target { return d.core.Targets() }

// validTargets keeps the targets heard from a peer whose names are
// valid; an invalid one is refused (logged once).
func (d *Daemon) validTargets(ts map[string]dataset.Target) map[string]dataset.Target {
	ok := make(map[string]dataset.Target, len(ts))
	for _, name := range sortedKeys(ts) {
		if d.peerServiceName("", "targets", name) && d.peerNodeName("", "targets", name, ts[name].Node) {
			ok[name] = ts[name]
		}
	}
	return ok
}

// clears lists the clear requests this node relays.
func (d *Daemon) clears() map[string]dataset.ClearRequest { return d.core.Clears() }

// validClears is validTargets for clear requests.
func (d *Daemon) validClears(cs map[string]dataset.ClearRequest) map[string]dataset.ClearRequest {
	ok := make(map[string]dataset.ClearRequest, len(cs))
	for _, name := range sortedKeys(cs) {
		if d.peerServiceName("", "clears", name) && d.peerNodeName("", "clears", name, cs[name].Node) {
			ok[name] = cs[name]
		}
	}
	return ok
}
