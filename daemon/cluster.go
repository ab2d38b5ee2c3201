package daemon

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
)

// peer is the loop's view of another member.
type peer struct {
	name string
	// data is the peer's last dataset, nil when never heard.
	data *dataset.Node
	up   bool
	// maintSince is when we first saw the peer announce maintenance.
	maintSince time.Time
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
	found := false
	for _, m := range d.cluster.Nodes {
		if m.Name == d.node.Name {
			found = true
		}
	}
	if !found {
		return &config.Error{File: d.cluster.File, Key: "nodes", Msg: fmt.Sprintf("this node (%s) is not a member of the cluster", d.node.Name)}
	}
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
		return fmt.Errorf("heartbeat: %w", err)
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
		d.log.Warn("heartbeat traffic rejected", zap.String("from", ev.Node), zap.String("reason", ev.Reason))
		return
	case heartbeat.Up:
		if p == nil {
			return
		}
		if !p.up {
			p.up = true
			d.log.Info("peer up", zap.String("node", ev.Node))
			d.emit(api.Event{Kind: "peer_up", Message: ev.Node + " up"})
		}
	case heartbeat.Down:
		if p == nil {
			return
		}
		if p.up {
			p.up = false
			d.log.Warn("peer down", zap.String("node", ev.Node), zap.String("reason", "no heartbeat for "+d.node.HB.Timeout.String()))
			d.emit(api.Event{Kind: "peer_down", Message: ev.Node + " down"})
		}
	case heartbeat.Data:
		if p == nil || ev.Data == nil {
			return
		}
		p.up = true
		if ev.Data.Monitor == dataset.NodeMaintenance {
			if p.maintSince.IsZero() {
				p.maintSince = d.clk.Now()
				d.log.Info("peer in maintenance", zap.String("node", ev.Node),
					zap.Duration("grace", d.node.MaintenanceGracePeriod))
			}
		} else {
			p.maintSince = time.Time{}
		}
		p.data = ev.Data
		d.mergeConfigs(ev.Node, ev.Data.Configs)
		d.mergeTargets(ev.Data.Targets)
		d.mergeClears(ev.Data.Clears)
	}
	d.updateCompat()
	d.updateRejoin()
}

// peerStatus is this node's conclusion about a peer.
func (d *Daemon) peerStatus(p *peer) dataset.NodeStatus {
	if p.data == nil {
		if p.up {
			return dataset.NodeUp
		}
		return dataset.NodeStUnknown
	}
	switch p.data.Monitor {
	case dataset.NodeMaintenance:
		// keep the last data for the grace period, heard or not
		if p.up || d.clk.Now().Sub(p.maintSince) < d.node.MaintenanceGracePeriod {
			return dataset.NodeStMaint
		}
		return dataset.NodeDown
	case dataset.NodeShutting:
		if p.up {
			return dataset.NodeStShutting
		}
		return dataset.NodeDown
	}
	if p.up {
		return dataset.NodeUp
	}
	return dataset.NodeDown
}

// updateCompat compares the compat versions of the live members and logs
// the seed's messages on every change.
func (d *Daemon) updateCompat() {
	ok := true
	for _, p := range d.peers {
		if p.up && p.data != nil && p.data.Compat != d.opts.Compat {
			ok = false
		}
	}
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
		if d.peers[name].data == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		d.setMonitor(dataset.NodeIdle, "every cluster node was heard from")
		return
	}
	if d.clk.Now().Sub(d.started) < d.node.RejoinGracePeriod {
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
