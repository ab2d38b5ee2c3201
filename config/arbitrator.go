package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ArbitratorConf is arbitrator.toml, the config of Haven's one-vote
// arbitrator (`nodemgr arbitrator run`, on a host that is no cluster
// member):
//
//	[arbitrator]
//	listen = "192.0.2.10:10400"
//	metrics_addr = "127.0.0.1:9478"   # optional
//
//	[cluster.prod]
//	secret = "…64 hex digits: prod's cluster.toml secret…"
//	node_keys_mode = "accept"          # optional: "require" (default) or "accept"
//
//	[cluster.prod.node_keys]           # optional: the members' public keys
//	n1 = "…nodemgr key show on n1…"
//	n2 = "…"
//
// One [cluster.NAME] table per cluster it serves; NAME is that cluster's
// cluster.name. Its keys are few and fixed, so the file is not in the
// keyword table (docs/operations.md, "The 2-node case", lists them).
type ArbitratorConf struct {
	File   string
	Listen string
	// MetricsAddr, when set, serves the arbitrator's Prometheus metrics
	// (/metrics, plain HTTP: bind it where only the scraper reaches).
	MetricsAddr string
	// Clusters are the clusters served, by name.
	Clusters map[string]ArbitratorCluster
}

// ArbitratorCluster is one [cluster.NAME] of arbitrator.toml.
type ArbitratorCluster struct {
	// Secret is the cluster secret (hex, lower case).
	Secret string
	// NodeKeys are the members' public keys (X25519, 32 bytes) by node
	// name: the reports of a member listed are authenticated with the
	// key that member and the arbitrator alone derive.
	NodeKeys map[string][]byte
	// NodeKeysMode is "require" (a listed member's report sealed with the
	// secret alone is refused) or "accept" (both kinds are taken: the
	// step of a migration while the nodes learn the arbitrator's key).
	NodeKeysMode string
}

// HasNodeKeys tells whether any cluster lists node keys (the arbitrator
// then needs its own key pair).
func (c *ArbitratorConf) HasNodeKeys() bool {
	for _, cl := range c.Clusters {
		if len(cl.NodeKeys) > 0 {
			return true
		}
	}
	return false
}

// ClusterNames are the clusters served, sorted.
func (c *ArbitratorConf) ClusterNames() []string {
	var out []string
	for n := range c.Clusters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseArbitratorConf parses the content of arbitrator.toml: every error
// names the file, the line and the key.
func (dec Decoder) ParseArbitratorConf(file string, data []byte) (*ArbitratorConf, error) {
	text := string(data)
	tree, err := dec(text)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			return nil, &Error{File: file, Line: se.Line, Key: se.LastKey, Msg: "syntax error: " + se.Msg}
		}
		return nil, &Error{File: file, Msg: "syntax error: " + err.Error()}
	}
	lines := indexLines(text)
	at := func(path []string, key, format string, a ...any) *Error {
		id := append([]string{}, path...)
		if key != "" {
			id = append(id, key)
		}
		return &Error{File: file, Line: lines.find(path, key), Key: strings.Join(id, "."), Msg: fmt.Sprintf(format, a...)}
	}
	c := &ArbitratorConf{File: file, Clusters: map[string]ArbitratorCluster{}}
	for _, top := range slices.Sorted(maps.Keys(tree.Values)) {
		switch top {
		case "arbitrator", "cluster":
		default:
			return nil, at([]string{top}, "", "unknown section [%s]: want [arbitrator] and [cluster.NAME]", top)
		}
		if _, ok := tree.Values[top].(map[string]any); !ok {
			return nil, at(nil, top, "must be a section")
		}
	}
	arb, _ := tree.Values["arbitrator"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(arb)) {
		v := arb[k]
		if k != "listen" && k != "metrics_addr" {
			return nil, at([]string{"arbitrator"}, k, "unknown keyword (known: listen, metrics_addr)")
		}
		s, ok := v.(string)
		if !ok {
			return nil, at([]string{"arbitrator"}, k, "want a string \"HOST:PORT\"")
		}
		if k == "listen" {
			c.Listen = s
		} else {
			c.MetricsAddr = s
		}
	}
	if c.MetricsAddr != "" {
		if err := checkHostPort(c.MetricsAddr); err != nil {
			return nil, at([]string{"arbitrator"}, "metrics_addr", "invalid address %q: %v", c.MetricsAddr, err)
		}
	}
	if c.Listen == "" {
		return nil, at([]string{"arbitrator"}, "listen", "required: the address and port the nodes reach, \"HOST:PORT\"")
	}
	if err := checkHostPort(c.Listen); err != nil {
		return nil, at([]string{"arbitrator"}, "listen", "invalid address %q: %v", c.Listen, err)
	}
	clusters, _ := tree.Values["cluster"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		v := clusters[name]
		path := []string{"cluster", name}
		t, ok := v.(map[string]any)
		if !ok {
			return nil, at([]string{"cluster"}, name, "keywords of a cluster go in sections [cluster.NAME]")
		}
		if !sectionNameRE.MatchString(name) {
			return nil, at(path, "", "invalid cluster name %q", name)
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if k != "secret" && k != "node_keys" && k != "node_keys_mode" {
				return nil, at(path, k, "unknown keyword (known: secret, node_keys, node_keys_mode)")
			}
		}
		secret, _ := t["secret"].(string)
		if !isHex(secret, 64) {
			return nil, at(path, "secret", "must be 64 hex digits (32 bytes): the secret of cluster %s's cluster.toml", name)
		}
		if why := weakSecret(secret); why != "" {
			return nil, at(path, "secret", "too weak: %s (cluster %s's cluster.toml refuses it too)", why, name)
		}
		ac := ArbitratorCluster{Secret: strings.ToLower(secret)}
		if err := parseArbitratorNodeKeys(&ac, t, path, at); err != nil {
			return nil, err
		}
		c.Clusters[name] = ac
	}
	if len(c.Clusters) == 0 {
		return nil, &Error{File: file, Msg: "no [cluster.NAME] section: the arbitrator serves no cluster"}
	}
	return c, nil
}

// parseArbitratorNodeKeys reads node_keys and node_keys_mode of the
// [cluster.NAME] table t at path into ac.
func parseArbitratorNodeKeys(ac *ArbitratorCluster, t map[string]any, path []string, at func(path []string, key, format string, a ...any) *Error) error {
	ac.NodeKeysMode = "require"
	if v, ok := t["node_keys_mode"]; ok {
		s, _ := v.(string)
		if s != "require" && s != "accept" {
			return at(path, "node_keys_mode", "want \"require\" or \"accept\"")
		}
		ac.NodeKeysMode = s
	}
	v, ok := t["node_keys"]
	if !ok {
		if ac.NodeKeysMode != "require" {
			return at(path, "node_keys_mode", "%q, but node_keys lists no key: list the members' keys first (nodemgr key show on each)", ac.NodeKeysMode)
		}
		return nil
	}
	keys, ok := v.(map[string]any)
	if !ok {
		return at(path, "node_keys", "want a table of NODE = \"KEY\" ([%s.node_keys], one line per member)", strings.Join(path, "."))
	}
	kpath := append(slices.Clone(path), "node_keys")
	ac.NodeKeys = map[string][]byte{}
	owner := map[string]string{}
	for _, node := range slices.Sorted(maps.Keys(keys)) {
		if !nodeNameRE.MatchString(node) || len(node) > 255 {
			return at(kpath, node, "invalid node name %q", node)
		}
		s, ok := keys[node].(string)
		if !ok {
			return at(kpath, node, "want a string, the key `nodemgr key show` prints on %s", node)
		}
		pub, err := ParseNodeKey(s)
		if err != nil {
			return at(kpath, node, "%v", err)
		}
		if other, dup := owner[string(pub)]; dup {
			return at(kpath, node, "the same key as %s: each member has its own key (run nodemgr key show on %s)", other, node)
		}
		owner[string(pub)] = node
		ac.NodeKeys[node] = pub
	}
	return nil
}
