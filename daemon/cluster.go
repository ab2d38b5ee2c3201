package daemon

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
	"haven/heartbeat"
	"haven/view"
)

// peer is the loop's view of another member: the shared rules of package
// view apply to it.
type peer struct {
	name string
	view.Peer
	// lastStatus is the status at the last tick, to notice changes that
	// come with time alone.
	lastStatus dataset.NodeStatus
}

// startHeartbeat joins the cluster when it has other members.
func (d *Daemon) startHeartbeat() error {
	d.peers = map[string]*peer{}
	for _, m := range d.cluster.Nodes {
		if m.Name != d.node.Name {
			d.peers[m.Name] = &peer{name: m.Name}
		}
	}
	if len(d.peers) == 0 {
		return nil
	}
	// membership, [hb] against [nodes] and the secret were checked at load
	// (config.CheckMember, tomlfile.ParseCluster)
	cfg := heartbeat.Config{
		Node:        d.node.Name,
		BindAddr:    d.node.HB.Addr,
		BindPort:    d.node.HB.Port,
		Members:     d.cluster.Nodes,
		ClusterName: d.cluster.Name,
		Secret:      d.cluster.Secret,
		Timeout:     d.node.HB.Timeout,
		Interval:    d.node.HB.Interval,
		Clock:       d.clk,
		Logger:      d.log.Named("hb"),
	}
	cfg.Insecure = d.cluster.InsecureNoSecret
	cfg.Incarnation = d.dur.Incarnation
	// advertise the address the other members know us by
	for _, m := range d.cluster.Nodes {
		if m.Name == d.node.Name {
			if host, port, err := net.SplitHostPort(m.Addr); err == nil {
				cfg.AdvertiseAddr = host
				cfg.AdvertisePort, _ = strconv.Atoi(port)
			}
		}
	}
	newHB := d.opts.Heartbeat
	if newHB == nil {
		newHB = heartbeat.NewMemberlist
	}
	hb, err := newHB(cfg)
	if err != nil {
		return d.hbBindError(err)
	}
	d.hb = hb
	d.hbEvents = hb.Events()
	return nil
}

// onHeartbeat applies one heartbeat event on the loop.
func (d *Daemon) onHeartbeat(ev heartbeat.Event) {
	p := d.peers[ev.Node]
	switch ev.Kind {
	case heartbeat.Rejected:
		d.log.Warn("heartbeat traffic rejected", zap.String("from", ev.Node), zap.String("addr", ev.Addr), zap.String("reason", ev.Reason))
		return
	case heartbeat.Impostor:
		d.onImpostor(ev)
		return
	case heartbeat.Up:
		if p == nil {
			return
		}
		if !p.Up {
			p.Up = true
			d.log.Info("peer up", zap.String("node", ev.Node))
			d.emit(api.Event{Kind: "peer_up", Message: ev.Node + " up"})
		}
	case heartbeat.Down:
		if p == nil {
			return
		}
		if p.Up {
			p.Peer = view.NoteDown(p.Peer)
			d.log.Warn("peer down", zap.String("node", ev.Node), zap.String("reason", "no heartbeat for "+d.node.HB.Timeout.String()))
			d.emit(api.Event{Kind: "peer_down", Message: ev.Node + " down"})
		}
	case heartbeat.Data:
		if p == nil || ev.Data == nil {
			return
		}
		wasMaint := !p.MaintSince.IsZero()
		p.Peer = view.NoteData(p.Peer, ev.Data, d.clk.Now())
		if !wasMaint && !p.MaintSince.IsZero() {
			d.log.Info("peer in maintenance", zap.String("node", ev.Node), zap.Duration("grace", d.node.MaintenanceGracePeriod))
		}
		d.mergeConfigs(ev.Node, ev.Data.Configs)
		d.mergeTargets(ev.Data.Targets)
		d.mergeClears(ev.Data.Clears)
	}
	d.updateCompat()
	d.updateRejoin()
	// a peer's change is a change of this node's view: decide again
	d.viewChanged = true
}

// peerStatus is this node's conclusion about a peer.
func (d *Daemon) peerStatus(p *peer) dataset.NodeStatus {
	return view.Status(p.Peer, d.clk.Now(), d.node.MaintenanceGracePeriod)
}

// updateCompat compares the compat versions of the live members and logs
// the seed's messages on every change.
func (d *Daemon) updateCompat() {
	peers := make(map[string]view.Peer, len(d.peers))
	for name, p := range d.peers {
		peers[name] = p.Peer
	}
	ok := view.CompatOK(d.opts.Compat, peers)
	if ok == d.compat {
		return
	}
	d.compat = ok
	if ok {
		d.log.Info("cluster members run compatible versions. enable ha orchestration")
		d.emit(api.Event{Kind: "compat", Message: "cluster members run compatible versions. enable ha orchestration"})
	} else {
		d.log.Warn("cluster members run incompatible versions. disable ha orchestration")
		d.emit(api.Event{Kind: "compat", Message: "cluster members run incompatible versions. disable ha orchestration"})
	}
	d.changed()
}

// updateRejoin ends the rejoin state once every member was heard, or at
// the end of rejoin_grace_period, freezing the node if some are missing.
func (d *Daemon) updateRejoin() {
	if d.monitor != dataset.NodeRejoin {
		return
	}
	var missing []string
	for _, name := range sortedKeys(d.peers) {
		if d.peers[name].Data == nil {
			missing = append(missing, name)
		}
	}
	switch view.Rejoin(len(missing), d.started, d.clk.Now(), d.node.RejoinGracePeriod) {
	case view.RejoinDone:
		d.setMonitor(dataset.NodeIdle, "every cluster node was heard from")
		return
	case view.StayRejoin:
		return
	}
	reason := fmt.Sprintf("rejoin grace period (%s) ended with nodes never heard from: %s", d.node.RejoinGracePeriod, strings.Join(missing, ", "))
	if !d.dur.NodeFrozen {
		d.setNodeFrozen(true, reason+": node frozen so that services never start twice (nodemgr thaw resumes)")
	}
	d.setMonitor(dataset.NodeIdle, reason)
}

// publish sends the local dataset when it changed since the last send.
func (d *Daemon) publish() {
	if d.hb == nil || d.gen == d.published {
		return
	}
	d.published = d.gen
	d.hb.Publish(d.localNode())
}
