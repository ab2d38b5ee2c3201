package driver

import (
	"maps"
	"slices"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/node"
)

// peerKinds maps the heartbeat's news of a peer to the core's peer
// events. A kind not listed (Rejected, Impostor, Asked, Answered, Silent,
// Heard, ...) is the shell's own: Heartbeat leaves it to the shell (a
// Silent peer is still up for the core: only its Down counts).
var peerKinds = map[heartbeat.Kind]node.PeerKind{
	heartbeat.Up:            node.PeerUp,
	heartbeat.Down:          node.PeerDown,
	heartbeat.Unseen:        node.PeerUnseen,
	heartbeat.Stale:         node.PeerStale,
	heartbeat.Fresh:         node.PeerFresh,
	heartbeat.Duplicate:     node.PeerDuplicate,
	heartbeat.DuplicateGone: node.PeerDuplicateGone,
	heartbeat.RunHeld:       node.PeerRunHeld,
	heartbeat.RunTrusted:    node.PeerRunTrusted,
	heartbeat.Data:          node.PeerData,
}

// PeerEvent is the core's peer event of a heartbeat event; false when
// the kind is not news of a peer for the core.
func PeerEvent(ev heartbeat.Event) (node.PeerEvent, bool) {
	k, ok := peerKinds[ev.Kind]
	if !ok {
		return node.PeerEvent{}, false
	}
	pe := node.PeerEvent{Node: ev.Node, Kind: k}
	switch k {
	case node.PeerUnseen:
		pe.Unseen = ev.Unseen
	case node.PeerStale, node.PeerDuplicate, node.PeerRunHeld:
		pe.Reason = ev.Reason
	case node.PeerData:
		pe.Data = ev.Data
	}
	return pe, true
}

// Heartbeat gives the core a heartbeat event about a peer, with the
// configs, targets and clears of its data whose names are invalid
// refused (they could name a path outside the service directory), then
// carries out what the core asks. It reports false for a kind the shell
// handles itself.
func (d *Driver) Heartbeat(ev heartbeat.Event) bool {
	pe, ok := PeerEvent(ev)
	if !ok {
		return false
	}
	if pe.Kind == node.PeerData {
		if _, known := d.Core.Peer(ev.Node); !known || ev.Data == nil {
			return true
		}
		pe.Data, pe.Changes = d.validData(ev)
	}
	d.Step(node.PeerNews{Event: pe, Now: d.clk.Now()})
	return true
}

// peerCopy is the Data of a peer's last Data event taken (raw) and the
// copy of it handed to the core (valid).
type peerCopy struct{ raw, valid *dataset.Node }

// validData is the copy of a Data event's data handed to the core: its
// configs, targets and clears with invalid names refused. With the
// event's changes based on the last event taken, only the entries they
// list are checked (the others are those of the last copy handed over),
// and the changes handed over are based on that copy; otherwise every
// entry is, and the core takes the copy as a whole.
func (d *Driver) validData(ev heartbeat.Event) (*dataset.Node, *dataset.Changes) {
	data := *ev.Data
	last := d.peerCopies[ev.Node]
	ch := ev.Changes
	if d.peerCopies == nil {
		d.peerCopies = map[string]peerCopy{}
	}
	if ch == nil || last.raw == nil || ch.Base != last.raw {
		data.Configs = d.validConfigs(ev.Node, ev.Data.Configs)
		data.Targets, data.Clears = d.validTargets(ev.Data.Targets), d.validClears(ev.Data.Clears)
		d.peerCopies[ev.Node] = peerCopy{raw: ev.Data, valid: &data}
		return &data, nil
	}
	prev := last.valid
	data.Configs = patchValid(prev.Configs, ev.Data.Configs, ch.Configs, func(name string, _ dataset.ConfigEntry) bool {
		return d.serviceName(ev.Node, "configs", name)
	})
	data.Targets = patchValid(prev.Targets, ev.Data.Targets, ch.Targets, func(name string, t dataset.Target) bool {
		return d.validNodeEntry("targets", name, t.Node)
	})
	data.Clears = prev.Clears
	if ch.Head {
		data.Clears = d.validClears(ev.Data.Clears)
	}
	d.peerCopies[ev.Node] = peerCopy{raw: ev.Data, valid: &data}
	return &data, &dataset.Changes{Base: prev, Head: ch.Head, Services: ch.Services, Targets: ch.Targets, Configs: ch.Configs}
}

// patchValid is prev (the valid entries of the last copy) with the
// entries of cur whose keys are listed in keys checked again (in name
// order): kept when valid, removed when invalid or gone. prev itself is
// never modified: it is copied (shallow) when an entry changes.
func patchValid[V any](prev, cur map[string]V, keys map[string]bool, valid func(string, V) bool) map[string]V {
	if len(keys) == 0 {
		return prev
	}
	out := make(map[string]V, len(prev)+len(keys))
	maps.Copy(out, prev)
	for _, k := range sortedKeys(keys) {
		if v, ok := cur[k]; ok && valid(k, v) {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}

// RefusedName is an invalid name a peer sent, refused: in What
// (configs, targets, clears), the service Svc or the node Node of its
// entry. Last is set on the report after which no more are made (a
// hostile peer cannot grow the memory of refused names, nor the log).
type RefusedName struct {
	From, What string
	Svc, Node  string
	Err        error
	Last       bool
}

// maxBadNames bounds the memory of refused names.
const maxBadNames = 256

// validConfigs keeps the config entries heard from peer from whose names
// are valid.
func (d *Driver) validConfigs(from string, es map[string]dataset.ConfigEntry) map[string]dataset.ConfigEntry {
	ok := make(map[string]dataset.ConfigEntry, len(es))
	for _, name := range sortedKeys(es) {
		if d.serviceName(from, "configs", name) {
			ok[name] = es[name]
		}
	}
	return ok
}

// validTargets keeps the targets heard from a peer whose names are
// valid.
func (d *Driver) validTargets(ts map[string]dataset.Target) map[string]dataset.Target {
	return validNodeEntries(d, "targets", ts, func(t dataset.Target) string { return t.Node })
}

// validClears is validTargets for clear requests.
func (d *Driver) validClears(cs map[string]dataset.ClearRequest) map[string]dataset.ClearRequest {
	return validNodeEntries(d, "clears", cs, func(c dataset.ClearRequest) string { return c.Node })
}

// validNodeEntries keeps the entries of es whose service and node
// (nodeOf) names are valid.
func validNodeEntries[E any](d *Driver, what string, es map[string]E, nodeOf func(E) string) map[string]E {
	ok := make(map[string]E, len(es))
	for _, name := range sortedKeys(es) {
		if d.validNodeEntry(what, name, nodeOf(es[name])) {
			ok[name] = es[name]
		}
	}
	return ok
}

// validNodeEntry checks the names of an entry of service svc that names
// node ("" is no node).
func (d *Driver) validNodeEntry(what, svc, node string) bool {
	return d.serviceName("", what, svc) && d.nodeName("", what, svc, node)
}

func (d *Driver) serviceName(from, what, name string) bool {
	if err := config.ValidServiceName(name); err != nil {
		d.refuse(RefusedName{From: from, What: what, Svc: name, Err: err})
		return false
	}
	return true
}

// nodeName checks the node named by the entry of service svc ("" is no
// node).
func (d *Driver) nodeName(from, what, svc, name string) bool {
	if name == "" {
		return true
	}
	if err := config.ValidNodeName(name); err != nil {
		d.refuse(RefusedName{From: from, What: what, Svc: svc, Node: name, Err: err})
		return false
	}
	return true
}

// refuse reports a refused name once.
func (d *Driver) refuse(r RefusedName) {
	key := r.What + "\x00" + r.Svc + "\x00" + r.Node
	if d.badNames == nil {
		d.badNames = map[string]bool{}
	}
	if d.badNames[key] || len(d.badNames) > maxBadNames {
		return
	}
	d.badNames[key] = true
	r.Last = len(d.badNames) > maxBadNames
	d.fx.RefusedName(r)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
