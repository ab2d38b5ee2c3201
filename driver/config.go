package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"haven/config"
	"haven/dataset"
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
		ConfirmTimeout: ConfirmTimeout(n.HB.Timeout), ClusterConf: ClusterConf(n, cl), ClusterFile: cl.File,
		SignedConfigs: len(cl.AdminKeys) > 0,
		Admin:         config.SignatureCheck{Cluster: cl.Name, Keys: cl.AdminKeys},
		Guard:         node.GuardConfig{Enabled: n.Guard, Lease: n.GuardLease, Act: config.GuardAct}}
}

// ClusterConf is the digest of what node n's configuration must share with
// every member (node/clusterconf.go): cluster.toml's members and their
// addresses, quorum, arbitrators (name, URI, weight: the timeouts may
// differ) and which members have a fence command (the commands themselves
// may differ, a host's own credentials file in them: what decides a
// takeover is whether a member is fenced), node.toml's hb.disk.fence. The secret and
// the cluster name are not in it: a member with another one is not heard
// at all.
func ClusterConf(n *config.NodeConfig, cl *config.ClusterConfig) *dataset.ClusterConf {
	var members, arbs, stonith []string
	for _, m := range cl.Nodes { // sorted by name
		members = append(members, m.Name+"="+strings.Join(m.LinkAddrs(), ","))
	}
	for _, a := range cl.Arbitrators { // sorted by name
		arbs = append(arbs, a.Name+"="+a.URI+"="+strconv.Itoa(a.Weight))
	}
	stonith = append(stonith, sortedKeys(cl.Stonith)...)
	return &dataset.ClusterConf{Members: confDigest(members), Quorum: confDigest([]string{strconv.FormatBool(cl.Quorum)}),
		Arbitrators: confDigest(arbs), Stonith: confDigest(stonith),
		DiskFence: confDigest([]string{strconv.FormatBool(n.HB.Disk.Fence && n.HB.Disk.Path != "")})}
}

// confDigest is the first 8 bytes of the SHA-256 of items, in hex.
func confDigest(items []string) string {
	h := sha256.New()
	for _, it := range items {
		h.Write([]byte(it))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ConfirmTimeout bounds the wait for the peers' adoption of an edit made
// here: long enough for a peer declared down meanwhile to be so.
func ConfirmTimeout(hbTimeout time.Duration) time.Duration { return 10*time.Second + 2*hbTimeout }

// OneVoteScheme prefixes the URI of a Haven one-vote arbitrator.
const OneVoteScheme = "haven://"

// QuorumConfig is the core's QuorumConfig from node.toml and cluster.toml.
func QuorumConfig(n *config.NodeConfig, cl *config.ClusterConfig) node.QuorumConfig {
	q := node.QuorumConfig{Enabled: cl.Quorum, SplitAction: n.SplitAction, HBTimeout: n.HB.Timeout, DiskFence: n.HB.Disk.Fence}
	var arbTimeout time.Duration
	for _, a := range cl.Arbitrators {
		q.Arbitrators = append(q.Arbitrators, quorum.Arbitrator{Name: a.Name, Weight: a.Weight, OneVote: strings.HasPrefix(a.URI, OneVoteScheme)})
		arbTimeout = max(arbTimeout, a.Timeout)
	}
	q.Stonith = append(q.Stonith, sortedKeys(cl.Stonith)...)
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
