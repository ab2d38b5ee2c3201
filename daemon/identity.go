package daemon

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"haven/config"
	"haven/config/tomlfile"
	"haven/heartbeat"
	"haven/internal/fsutil"
	"haven/node"
)

// clusterIdentity is what a node remembers of its cluster (node.ClusterIdentity).
type clusterIdentity = node.ClusterIdentity

// secretFingerprint is one-way: it tells two secrets apart and nothing more.
func secretFingerprint(secret string) string {
	if secret == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("haven cluster identity"))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// identityOf is the identity of a cluster config, nil when the node is
// alone (no other member: nothing to become a second copy of).
func identityOf(c *config.ClusterConfig, self string) *clusterIdentity {
	for _, m := range c.Nodes {
		if m.Name != self {
			return &clusterIdentity{Name: c.Name, SecretFingerprint: secretFingerprint(c.Secret)}
		}
	}
	return nil
}

// checkIdentity compares the cluster of cluster.toml with the one this
// node was a member of. A change is refused (a *config.Error naming
// cluster.toml: exit 2) unless newCluster accepts it; an accepted or first
// identity is written to the state file before the daemon goes on.
func (d *Daemon) checkIdentity(newCluster bool) error {
	cur := identityOf(d.cluster, d.node.Name)
	rec := d.dur.Cluster
	if rec != nil && (cur == nil || *cur != *rec) {
		if !newCluster {
			return d.identityError(rec, cur)
		}
		to := "(alone)"
		if cur != nil {
			to = cur.Name
		}
		d.log.Warn("cluster identity changed by --new-cluster: this node leaves its former cluster",
			zap.String("node", d.node.Name), zap.String("from", rec.Name), zap.String("to", to),
			zap.Bool("secret_changed", cur != nil && cur.SecretFingerprint != rec.SecretFingerprint),
			zap.String("reason", "nodemgr daemon start/run --new-cluster"))
	} else if rec == nil && cur != nil {
		d.log.Info("cluster identity recorded", zap.String("node", d.node.Name), zap.String("cluster", cur.Name))
	} else {
		return nil
	}
	d.drv.Input(node.IdentityRecorded{Cluster: cur})
	return d.writeStateNow("record the cluster identity")
}

// writeStateNow writes the durable state at once, before the daemon goes
// on (start-up only: the loop's writes go through the persister).
func (d *Daemon) writeStateNow(what string) error {
	b, err := encodeDurable(*d.dur)
	if err != nil {
		return err
	}
	if err := fsutil.WriteAtomic(d.p.State(), b, 0o600); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// nextIncarnation numbers this run of the node for the heartbeat envelope:
// the wall clock in nanoseconds, or one more than the last run if the clock
// went backwards, recorded before any frame is sent, so that a run never
// reuses the number of an earlier one (peers would drop its frames as
// replays).
func (d *Daemon) nextIncarnation() error {
	if len(d.cluster.Nodes) < 2 {
		return nil
	}
	inc := uint64(d.clk.Now().UnixNano())
	if inc <= d.dur.Incarnation {
		inc = d.dur.Incarnation + 1
	}
	d.drv.Input(node.IncarnationRecorded{Incarnation: inc})
	return d.writeStateNow("record the heartbeat incarnation")
}

// onImpostor reacts to frames authenticated under this node's own name
// from a later run elsewhere, or to a peer's beat listing this node among
// the names it hears two runs of (a cloned host): another daemon runs as
// this node. Peers
// confirm a run only at the configured address, but two daemons with one
// name is a configuration error the admin must see: the node freezes
// itself (nothing more is started here) until the admin thaws it.
func (d *Daemon) onImpostor(ev heartbeat.Event) {
	e := node.Impostor{Addr: ev.Addr, Reason: ev.Reason}
	d.logEvent(e)
	msg := e.String()
	if !d.dur.NodeFrozen {
		d.setNodeFrozen(true, msg+": node frozen so that services never start twice (check node.name on the other host, then nodemgr thaw)")
	}
}

// identityError says in one line what changed and how to go on.
func (d *Daemon) identityError(rec, cur *clusterIdentity) error {
	was := fmt.Sprintf("this node was a member of cluster %q (recorded in %s)", rec.Name, d.p.State())
	if _, err := os.Stat(d.cluster.File); errors.Is(err, fs.ErrNotExist) {
		return &config.Error{File: d.cluster.File, Msg: fmt.Sprintf("missing, but %s: restore it, or start with --new-cluster to leave that cluster", was)}
	}
	switch {
	case cur == nil:
		return d.cluster.ErrAt(config.SectionNodes, "", "no other member, but %s: restore its members, or start with --new-cluster to leave that cluster", was)
	case cur.Name != rec.Name:
		return d.cluster.ErrAt(config.SectionCluster, "name", "%q, but %s: restore the name, or start with --new-cluster to join cluster %q", cur.Name, was, cur.Name)
	}
	return d.cluster.ErrAt(config.SectionCluster, "secret", "differs from the secret of cluster %q this node was a member of (recorded in %s): restore it, or start with --new-cluster to change the secret", rec.Name, d.p.State())
}

// checkLocalAddr refuses a node whose own [nodes] address is a literal IP
// of another host (real heartbeat only: an in-memory network has no
// interfaces).
func (d *Daemon) checkLocalAddr() error {
	if d.opts.Heartbeat != nil {
		return nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("list the local addresses: %w", err)
	}
	return tomlfile.CheckLocalAddr(d.node, d.cluster, addrs)
}

// hbBindError explains a heartbeat that could not bind its port.
func (d *Daemon) hbBindError(err error) error {
	if own, ok := d.cluster.Member(d.node.Name); ok && len(own.LinkAddrs()) > 1 && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), syscall.EADDRINUSE.Error())) {
		// several links: each binds its own address (cluster.toml)
		return fmt.Errorf("heartbeat addresses %s (nodes.%s in %s): another daemon may already run as this node, or another program holds one of them (%v): %w",
			strings.Join(own.LinkAddrs(), ", "), d.node.Name, d.cluster.File, err, syscall.EADDRINUSE)
	}
	if errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), syscall.EADDRINUSE.Error()) {
		return fmt.Errorf("heartbeat port %s:%d (hb.addr/hb.port in %s): another daemon may already run as this node (%s), or another program holds the port: %w",
			d.node.HB.Addr, d.node.HB.Port, d.node.File, d.node.Name, syscall.EADDRINUSE)
	}
	return err
}
