package driver

import (
	"strings"
	"time"

	"haven/config"
	"haven/node"
	"haven/quorum"
)

// CoreConfig is the core's config of node n of cluster cl (node.toml and
// cluster.toml), announcing compat; local and codec are the shell's.
func CoreConfig(n *config.NodeConfig, cl *config.ClusterConfig, compat int, local node.Local, codec node.ConfigCodec) node.Config {
	return node.Config{Name: n.Name, ClusterNodes: cl.NodeNames(), Compat: compat,
		MaintenanceGrace: n.MaintenanceGracePeriod, RejoinGrace: n.RejoinGracePeriod,
		ReadyPeriod: n.ReadyPeriod, ReadyFastAck: n.ReadyFastAck, CheckInterval: n.CheckInterval, MonitorInterval: n.MonitorInterval,
		Quorum: QuorumConfig(n, cl), Local: local, Configs: codec,
		ConfirmTimeout: ConfirmTimeout(n.HB.Timeout)}
}

// ConfirmTimeout bounds the wait for the peers' adoption of an edit made
// here: long enough for a peer declared down meanwhile to be so.
func ConfirmTimeout(hbTimeout time.Duration) time.Duration { return 10*time.Second + 2*hbTimeout }

// OneVoteScheme prefixes the URI of a Haven one-vote arbitrator.
const OneVoteScheme = "haven://"

// QuorumConfig is the core's QuorumConfig from node.toml and cluster.toml.
func QuorumConfig(n *config.NodeConfig, cl *config.ClusterConfig) node.QuorumConfig {
	q := node.QuorumConfig{Enabled: cl.Quorum, SplitAction: n.SplitAction, HBTimeout: n.HB.Timeout}
	var arbTimeout time.Duration
	for _, a := range cl.Arbitrators {
		q.Arbitrators = append(q.Arbitrators, quorum.Arbitrator{Name: a.Name, Weight: a.Weight, OneVote: strings.HasPrefix(a.URI, OneVoteScheme)})
		arbTimeout = max(arbTimeout, a.Timeout)
	}
	for _, name := range sortedKeys(cl.Stonith) {
		q.Stonith = append(q.Stonith, name)
	}
	q.Stonith = append(q.Stonith, DiskFenced(n, cl)...)
	// a beat: the heartbeat's interval, no longer than a sixth of its
	// timeout
	beat := n.HB.Interval
	if t := n.HB.Timeout / 6; t > 0 && t < beat {
		beat = t
	}
	q.Timing = quorum.Timing{Beat: beat, ArbitratorTimeout: arbTimeout}
	return q
}

// DiskFenced are the members fenced through the shared disk when a
// survivor must fence them: with [hb.disk] fence = true, every other member
// that has no [stonith.NODE] command (daemon/sbd.go runs the fence).
func DiskFenced(n *config.NodeConfig, cl *config.ClusterConfig) []string {
	if !n.HB.Disk.Fence || n.HB.Disk.Path == "" {
		return nil
	}
	var out []string
	for _, m := range cl.NodeNames() {
		if _, ok := cl.Stonith[m]; !ok && m != n.Name {
			out = append(out, m)
		}
	}
	return out
}
