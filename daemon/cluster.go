package daemon

import (
	"net"
	"strconv"

	"go.uber.org/zap"

	"haven/dataset"
	"haven/heartbeat"
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
	d.keys.apply(&cfg, d.cluster.NodeKeysMode)
	cfg.Incarnation = d.dur.Incarnation
	if d.gl.on {
		cfg.Mute = d.guardMute // a wedged loop looks dead to its peers (guard.go)
	}
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

// onHeartbeat applies one heartbeat event on the loop: the driver gives
// the node core the news of a peer (the configs it carries too, their
// names checked); the other kinds are the daemon's.
func (d *Daemon) onHeartbeat(ev heartbeat.Event) {
	d.prepareOnSilence(ev) // prepare.go: Silent, Heard and Down of a peer
	if isLinkEvent(ev) {
		d.onLink(ev) // links.go: an alarm, never a peer event
		return
	}
	if d.drv.Heartbeat(ev) {
		d.mergeMoreLater()
		return
	}
	switch ev.Kind {
	case heartbeat.Rejected:
		d.log.Warn("heartbeat traffic rejected", zap.String("from", ev.Node), zap.String("addr", ev.Addr), zap.String("reason", ev.Reason))
	case heartbeat.Impostor:
		d.onImpostor(ev)
	case heartbeat.Asked:
		d.onAsked(ev)
	case heartbeat.Answered:
		d.onAnswered(ev)
	}
}

// peerStatus is this node's conclusion about a peer.
func (d *Daemon) peerStatus(name string) dataset.NodeStatus {
	return d.core.PeerStatus(name, d.clk.Now())
}
