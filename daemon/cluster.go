package daemon

import (
	"net"
	"strconv"

	"go.uber.org/zap"

	"haven/dataset"
	"haven/heartbeat"
	"haven/node"
)

// startHeartbeat joins the cluster when it has other members.
func (d *Daemon) startHeartbeat() error {
	if len(d.core.PeerNames()) == 0 {
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

// onHeartbeat applies one heartbeat event on the loop: the node core
// takes the peer's news (the configs it carries too).
func (d *Daemon) onHeartbeat(ev heartbeat.Event) {
	if isLinkEvent(ev) {
		d.onLink(ev) // links.go: an alarm, never a peer event
		return
	}
	pe := node.PeerEvent{Node: ev.Node}
	switch ev.Kind {
	case heartbeat.Rejected:
		d.log.Warn("heartbeat traffic rejected", zap.String("from", ev.Node), zap.String("addr", ev.Addr), zap.String("reason", ev.Reason))
		return
	case heartbeat.Impostor:
		d.onImpostor(ev)
		return
	case heartbeat.Asked:
		d.onAsked(ev)
		return
	case heartbeat.Answered:
		d.onAnswered(ev)
		return
	case heartbeat.Up:
		pe.Kind = node.PeerUp
	case heartbeat.Down:
		pe.Kind = node.PeerDown
	case heartbeat.Unseen:
		pe.Kind, pe.Unseen = node.PeerUnseen, ev.Unseen
	case heartbeat.Stale:
		pe.Kind, pe.Reason = node.PeerStale, ev.Reason
	case heartbeat.Fresh:
		pe.Kind = node.PeerFresh
	case heartbeat.Duplicate:
		pe.Kind, pe.Reason = node.PeerDuplicate, ev.Reason
	case heartbeat.DuplicateGone:
		pe.Kind = node.PeerDuplicateGone
	case heartbeat.Data:
		if _, ok := d.core.Peer(ev.Node); !ok || ev.Data == nil {
			return
		}
		pe.Kind, pe.Data = node.PeerData, ev.Data
		// configs, targets and clears with invalid names are refused here
		data := *ev.Data
		data.Configs = d.validConfigs(ev.Node, ev.Data.Configs)
		data.Targets, data.Clears = d.validTargets(ev.Data.Targets), d.validClears(ev.Data.Clears)
		pe.Data = &data
	default:
		return
	}
	d.core.Heartbeat(pe, d.clk.Now())
	d.applyReady()
	d.mergeMoreLater()
}

// peerStatus is this node's conclusion about a peer.
func (d *Daemon) peerStatus(name string) dataset.NodeStatus {
	return d.core.PeerStatus(name, d.clk.Now())
}

// publish sends the local dataset when it changed since the last send.
func (d *Daemon) publish() {
	if d.gen == d.published {
		return
	}
	d.published = d.gen
	n := d.localNode()
	d.metrics.setLocal(n) // a lone node too (no heartbeat)
	if d.hb != nil {
		d.hb.Publish(n)
	}
}
