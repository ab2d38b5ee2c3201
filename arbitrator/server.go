package arbitrator

import (
	"context"
	"crypto/ecdh"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/quorum"
)

// Timing of the one-vote arbitrator (quorum's, shared with the nodes).
const (
	Lease = quorum.DefaultLease
	Fresh = quorum.DefaultFresh
)

// Config is what a Server runs with.
type Config struct {
	Conf *config.ArbitratorConf
	Log  *zap.Logger
	// Now is the clock (time.Now: its monotonic reading times the leases).
	Now func() time.Time
	// Key is the arbitrator's private key (arbitrator.key), needed when a
	// cluster lists node keys.
	Key *ecdh.PrivateKey
}

// Server is the one-vote arbitrator: it answers the reports of the nodes
// of the clusters it serves, one lease book per cluster (quorum.LeaseBook).
type Server struct {
	conn    *net.UDPConn
	log     *zap.Logger
	now     func() time.Time
	started time.Time
	served  map[string]*served

	mu      sync.Mutex
	books   map[string]*quorum.LeaseBook
	last    map[runKey]uint64 // the highest sequence answered, by node run
	nodes   map[string]map[string]*NodeSeen
	counts  Counters
	limiter limiter
}

// served is what authenticates the reports of one cluster.
type served struct {
	secret []byte
	// pairs are the keys of each member listed in node_keys with this
	// arbitrator.
	pairs map[string]keys
	// require refuses a listed member's report sealed with the secret
	// alone (node_keys_mode "require").
	require bool
}

// keysFor are the keys that open a report of header h, or why none may.
func (c *served) keysFor(h header) (keys, error) {
	k, listed := c.pairs[h.node]
	switch {
	case h.pair && !listed:
		return keys{}, fmt.Errorf("%w: sealed with a node key, but arbitrator.toml lists no key of %s (node_keys)", errNotOwn, h.node)
	case h.pair:
		return k, nil
	case listed && c.require:
		return keys{}, fmt.Errorf("%w: sealed with the cluster secret alone, but %s has a node key in arbitrator.toml (node_keys_mode = \"require\"): forged by another holder of the secret, or %s's cluster.toml lacks this arbitrator's key or %s lacks its node.key", errNotOwn, h.node, h.node, h.node)
	case c.require && len(c.pairs) > 0:
		// require lists every member's key: a node it does not list is
		// no member (one removed from the cluster, whose files still
		// hold the secret)
		return keys{}, fmt.Errorf("%w: sealed with the cluster secret alone, and arbitrator.toml lists no key of %s (node_keys_mode = \"require\": every member has one): a node removed from the cluster, or node_keys lacks a member", errNotOwn, h.node)
	}
	return keys{secret: c.secret}, nil
}

// errNotOwn is in the chain of the errors of reports refused for not
// being sealed with the key of the node they name.
var errNotOwn = errors.New("not sealed with its node's key")

type runKey struct {
	cluster, node string
	inc           uint64
}

// Counters count what the arbitrator did since it started.
type Counters struct {
	Reports  uint64 `json:"reports"`
	Grants   uint64 `json:"grants"`
	Refusals uint64 `json:"refusals"` // another partition holds the vote, or the start-up wait
	Rejected uint64 `json:"rejected"` // malformed, unknown cluster, not authentic, replayed, clock off
	// NotOwnKey are the rejected reports (counted in Rejected too) not
	// sealed with the pairwise key of the node they name: with the
	// cluster secret alone from a node whose key is listed, with a key
	// that does not open them, or with a node key not listed.
	NotOwnKey uint64 `json:"not_own_key"`
}

// NodeSeen is a node's last report as the arbitrator saw it.
type NodeSeen struct {
	Node       string    `json:"node"`
	Addr       string    `json:"addr"`
	LastReport time.Time `json:"last_report"`
	Partition  []string  `json:"partition"`
	Running    int       `json:"running"`
	Granted    bool      `json:"granted"`
	// NodeKey: the report was sealed with the node's pairwise key (false:
	// the cluster secret alone).
	NodeKey bool `json:"node_key"`
}

// Listen binds the arbitrator's UDP address.
func Listen(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	s := &Server{log: cfg.Log, now: cfg.Now, served: map[string]*served{}, books: map[string]*quorum.LeaseBook{},
		last: map[runKey]uint64{}, nodes: map[string]map[string]*NodeSeen{}}
	s.started = s.now()
	for name, cl := range cfg.Conf.Clusters {
		sv, err := newServed(name, cl, cfg.Key)
		if err != nil {
			return nil, err
		}
		s.served[name] = sv
		// a restarted arbitrator remembers no lease: the book gives none
		// until any lease given before its start has ended
		s.books[name] = quorum.NewLeaseBook(quorum.LeaseConfig{Lease: Lease, Fresh: Fresh}, s.started)
		s.nodes[name] = map[string]*NodeSeen{}
	}
	addr, err := net.ResolveUDPAddr("udp", cfg.Conf.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Conf.Listen, err)
	}
	s.conn, err = net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Conf.Listen, err)
	}
	return s, nil
}

// newServed derives the keys of cluster name of arbitrator.toml.
func newServed(name string, cl config.ArbitratorCluster, priv *ecdh.PrivateKey) (*served, error) {
	secret, err := hex.DecodeString(cl.Secret)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: secret: %w", name, err)
	}
	sv := &served{secret: secret, pairs: map[string]keys{}, require: cl.NodeKeysMode != "accept"}
	if len(cl.NodeKeys) > 0 && priv == nil {
		return nil, fmt.Errorf("cluster %s lists node keys, but the arbitrator has no key pair (make one with nodemgr arbitrator key generate, and list its public key as key of [arbitrator.NAME] in the cluster's cluster.toml)", name)
	}
	for node, b := range cl.NodeKeys {
		pub, err := ecdh.X25519().NewPublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: node key of %s: %w", name, node, err)
		}
		if sv.pairs[node], err = pairKeys(secret, priv, pub); err != nil {
			return nil, fmt.Errorf("cluster %s: node key of %s: %w", name, node, err)
		}
	}
	return sv, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.conn.LocalAddr() }

// Serve answers reports until ctx ends; it closes the socket.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.conn.Close()
	}()
	buf := make([]byte, MaxDatagram+1)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.log.Warn("read", zap.Error(err))
			continue
		}
		if out := s.handle(buf[:n], from); out != nil {
			if _, err := s.conn.WriteToUDP(out, from); err != nil {
				s.log.Warn("answer", zap.String("to", from.String()), zap.Error(err))
			}
		}
	}
}

// handle answers one datagram: the sealed grant, or nil (refused, logged
// at most once per source and reason per 10 s).
func (s *Server) handle(b []byte, from *net.UDPAddr) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	reject := func(reason string, fields ...zap.Field) []byte {
		s.counts.Rejected++
		if s.limiter.allow(from.IP.String()+" "+reason, now) {
			s.log.Warn("report rejected: "+reason, append(fields, zap.String("from", from.String()))...)
		}
		return nil
	}
	if len(b) > MaxDatagram {
		return reject("datagram too large")
	}
	h, ct, err := parseHeader(b)
	if err != nil || h.typ != typeReport {
		return reject("not a report of this version")
	}
	sv, ok := s.served[h.cluster]
	if !ok {
		return reject("unknown cluster", zap.String("cluster", h.cluster))
	}
	k, err := sv.keysFor(h)
	if err == nil {
		var body ReportBody
		if err = open(k, h, ct, &body); err == nil {
			return s.answer(now, h, k, body, from, reject)
		}
	}
	if h.pair || errors.Is(err, errNotOwn) {
		s.counts.NotOwnKey++
	}
	return reject(err.Error(), zap.String("cluster", h.cluster), zap.String("node", h.node))
}

// answer books authentic report body of header h and seals its answer
// with k, or refuses a replay or a report sent too long ago.
func (s *Server) answer(now time.Time, h header, k keys, body ReportBody, from *net.UDPAddr, reject func(string, ...zap.Field) []byte) []byte {
	rk := runKey{h.cluster, h.node, h.inc}
	if h.seq <= s.last[rk] || s.olderRun(rk) {
		return reject("replayed or reordered report", zap.String("cluster", h.cluster), zap.String("node", h.node))
	}
	if skew := now.Sub(time.UnixMilli(body.SentUnixMs)); skew > maxSkew || skew < -maxSkew {
		return reject(fmt.Sprintf("sent %s from this host's clock (more than %s: replayed, or a clock off)", skew.Round(time.Second), maxSkew),
			zap.String("cluster", h.cluster), zap.String("node", h.node))
	}
	s.last[rk] = h.seq
	s.counts.Reports++
	ans := s.books[h.cluster].Report(now, quorum.Report{Node: h.node, Partition: body.Partition, Running: body.Running})
	if ans.Granted {
		s.counts.Grants++
	} else {
		s.counts.Refusals++
	}
	s.nodes[h.cluster][h.node] = &NodeSeen{Node: h.node, Addr: from.String(), LastReport: now, Partition: slices.Clone(body.Partition), Running: body.Running, Granted: ans.Granted, NodeKey: h.pair}
	out, err := seal(k, typeGrant, h.cluster, h.node, h.inc, h.seq, ans)
	if err != nil {
		s.log.Error("seal a grant", zap.Error(err))
		return nil
	}
	return out
}

// olderRun reports whether a later run of rk's node was answered: a run
// of a node never comes back (its incarnation only grows).
func (s *Server) olderRun(rk runKey) bool {
	for k := range s.last {
		if k.cluster == rk.cluster && k.node == rk.node && k.inc > rk.inc {
			return true
		}
	}
	// forget the earlier runs of the node: one entry a node
	for k := range s.last {
		if k.cluster == rk.cluster && k.node == rk.node && k.inc < rk.inc {
			delete(s.last, k)
		}
	}
	return false
}

// Status is what the arbitrator knows, for `nodemgr arbitrator status`.
type Status struct {
	Listen   string          `json:"listen"`
	Pid      int             `json:"pid,omitempty"`
	Started  time.Time       `json:"started"`
	Lease    string          `json:"lease"`
	Counters Counters        `json:"counters"`
	Clusters []ClusterStatus `json:"clusters"`
}

// ClusterStatus is one cluster's vote: the partition that holds it, the
// leases running, and each node's last report.
type ClusterStatus struct {
	Name    string     `json:"name"`
	Winner  []string   `json:"winner,omitempty"`
	Holders []Holder   `json:"holders,omitempty"`
	Nodes   []NodeSeen `json:"nodes,omitempty"`
}

// Holder is a node whose lease has not ended, and when it ends.
type Holder struct {
	Node  string    `json:"node"`
	Until time.Time `json:"until"`
}

// Status returns the arbitrator's state now.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st := Status{Listen: s.conn.LocalAddr().String(), Started: s.started, Lease: Lease.String(), Counters: s.counts}
	var names []string
	for n := range s.books {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cs := ClusterStatus{Name: n, Winner: s.books[n].Winner()}
		for node, end := range s.books[n].Holders(now) {
			cs.Holders = append(cs.Holders, Holder{Node: node, Until: end.Round(0)})
		}
		sort.Slice(cs.Holders, func(i, j int) bool { return cs.Holders[i].Node < cs.Holders[j].Node })
		for _, ns := range s.nodes[n] {
			c := *ns
			c.LastReport = c.LastReport.Round(0)
			cs.Nodes = append(cs.Nodes, c)
		}
		sort.Slice(cs.Nodes, func(i, j int) bool { return cs.Nodes[i].Node < cs.Nodes[j].Node })
		st.Clusters = append(st.Clusters, cs)
	}
	return st
}

// limiter lets one log line per key per 10 s, at most 20 per 10 s in all.
type limiter struct {
	seen   map[string]time.Time
	window time.Time
	n      int
}

func (l *limiter) allow(key string, now time.Time) bool {
	if l.seen == nil || now.Sub(l.window) >= 10*time.Second {
		l.seen, l.window, l.n = map[string]time.Time{}, now, 0
	}
	if _, ok := l.seen[key]; ok || l.n >= 20 {
		return false
	}
	l.seen[key] = now
	l.n++
	return true
}
