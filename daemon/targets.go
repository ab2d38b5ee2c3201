package daemon

import (
	"haven/dataset"
)

// targets lists the admin targets this node knows, for the heartbeats.
func (d *Daemon) targets() map[string]dataset.Target { return d.core.Targets() }

// mergeTargets adopts the peers' targets that are newer than ours (the
// node core decides); an invalid name from a peer is refused here.
func (d *Daemon) mergeTargets(ts map[string]dataset.Target) {
	var ok map[string]dataset.Target
	for _, name := range sortedKeys(ts) {
		if !d.peerServiceName("", "targets", name) || !d.peerNodeName("", "targets", name, ts[name].Node) {
			continue
		}
		if ok == nil {
			ok = make(map[string]dataset.Target, len(ts))
		}
		ok[name] = ts[name]
	}
	if ok == nil {
		return
	}
	d.core.MergeTargets(ok, d.snapshot)
	d.applyReady()
}

// clears lists the clear requests this node relays.
func (d *Daemon) clears() map[string]dataset.ClearRequest { return d.core.Clears() }

// mergeClears applies the peers' clear requests that are newer than ours.
func (d *Daemon) mergeClears(cs map[string]dataset.ClearRequest) {
	var ok map[string]dataset.ClearRequest
	for _, name := range sortedKeys(cs) {
		if !d.peerServiceName("", "clears", name) || !d.peerNodeName("", "clears", name, cs[name].Node) {
			continue
		}
		if ok == nil {
			ok = make(map[string]dataset.ClearRequest, len(cs))
		}
		ok[name] = cs[name]
	}
	if ok == nil {
		return
	}
	d.core.MergeClears(ok, d.clk.Now())
	d.applyReady()
}
