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
	// Clusters are the secrets (hex, as written) by cluster name.
	Clusters map[string]string
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
	c := &ArbitratorConf{File: file, Clusters: map[string]string{}}
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
			if k != "secret" {
				return nil, at(path, k, "unknown keyword (known: secret)")
			}
		}
		secret, _ := t["secret"].(string)
		if !isHex(secret, 64) {
			return nil, at(path, "secret", "must be 64 hex digits (32 bytes): the secret of cluster %s's cluster.toml", name)
		}
		if why := weakSecret(secret); why != "" {
			return nil, at(path, "secret", "too weak: %s (cluster %s's cluster.toml refuses it too)", why, name)
		}
		c.Clusters[name] = strings.ToLower(secret)
	}
	if len(c.Clusters) == 0 {
		return nil, &Error{File: file, Msg: "no [cluster.NAME] section: the arbitrator serves no cluster"}
	}
	return c, nil
}
