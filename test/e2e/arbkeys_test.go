package e2e

import (
	"context"
	"crypto/ecdh"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"haven/arbitrator"
	"haven/config"
	"haven/config/tomlfile"
	"haven/test/testbed"
)

// The one-vote arbitrator with per-node keys, on loopback: the arbitrator
// makes its key pair (nodemgr arbitrator key generate), its arbitrator.toml
// lists both members' keys, their cluster.toml the arbitrator's; the real
// daemons' reports are then sealed with their node keys (the arbitrator's
// status says so for each). An insider holding n2's files (cluster.toml,
// node.key) reports as n1, sealed with n2's key pair and with the secret
// alone: the arbitrator, a process outside the nodes, answers neither,
// counts both, and shows n1's own last report still.
func TestOneVoteArbitratorNodeKeys(t *testing.T) {
	t.Parallel() // loopback daemons and arbitrator on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	arb := func(args ...string) testbed.Result {
		r, err := testbed.Run(filepath.Join(binDir, "nodemgr"), root, append([]string{"arbitrator"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	gen := arb("key", "generate")
	if gen.Code != 0 || !strings.HasPrefix(gen.Out, "key = \"") {
		t.Fatalf("arbitrator key generate: %s", gen)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc", "arbitrator.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("arbitrator.key: %v, %v", fi, err)
	}
	if r := arb("key", "show"); r.Out != gen.Out {
		t.Fatalf("key show %q, key generate %q", r.Out, gen.Out)
	}
	nodeKeys := ""
	for _, n := range names {
		nodeKeys += c[n].must("nodemgr", "key", "generate")
	}
	base := readFile(t, c["n1"].root+"/etc/cluster.toml")
	secret := regexp.MustCompile(`secret = "([0-9a-f]{64})"`).FindStringSubmatch(base)
	if secret == nil {
		t.Fatalf("no secret in cluster.toml:\n%s", base)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	conf := filepath.Join(root, "etc", "arbitrator.toml")
	writeFile(t, conf, fmt.Sprintf("[arbitrator]\nlisten = %q\n\n[cluster.test]\nsecret = %q\n\n[cluster.test.node_keys]\n%s", addr, secret[1], nodeKeys))
	os.Chmod(conf, 0o600)
	if r := arb("start"); r.Code != 0 {
		t.Fatalf("arbitrator start: %s", r)
	}
	t.Cleanup(func() { arb("stop") })
	// the one-vote arbitrator counts in the quorum's votes: the nodes
	// report to it with the quorum on
	cluster := strings.Replace(base, "[cluster]\n", "[cluster]\nquorum = true\n", 1) + "\n[node_keys]\n" + nodeKeys + fmt.Sprintf("\n[arbitrator.a1]\nuri = \"haven://%s\"\ntimeout = \"1s\"\n", addr) + gen.Out
	for _, n := range names {
		writeClusterToml(t, c[n], cluster)
	}
	startNodes(t, c, names)
	status := func() arbitrator.Status {
		t.Helper()
		r := arb("status", "--format", "json")
		var st arbitrator.Status
		if err := json.Unmarshal([]byte(r.Out), &st); err != nil {
			t.Fatalf("arbitrator status: %s: %v", r, err)
		}
		return st
	}
	waitFor(t, 20*time.Second, "both nodes report sealed with their node keys", func() bool {
		st := status()
		if len(st.Clusters) != 1 || len(st.Clusters[0].Nodes) != 2 {
			return false
		}
		for _, n := range st.Clusters[0].Nodes {
			if !n.NodeKey || len(n.Partition) != 2 {
				return false
			}
		}
		return true
	})

	// the insider's tools: n2's files
	n2Key, err := tomlfile.LoadNodeKey(filepath.Join(c["n2"].root, "etc", "node.key"))
	if err != nil {
		t.Fatal(err)
	}
	arbPub, err := config.ParseNodeKey(strings.Trim(strings.TrimPrefix(strings.TrimSpace(gen.Out), "key = "), `"`))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdh.X25519().NewPublicKey(arbPub)
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := hex.DecodeString(secret[1])
	for i, f := range []*arbitrator.Reporter{
		{NodeKey: n2Key, ArbitratorKey: pub}, // n2's key pair
		{},                                   // the secret alone
	} {
		f.Addr, f.Cluster, f.Node, f.Secret, f.Inc = addr, "test", "n1", sec, uint64(time.Now().UnixNano())+uint64(i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		g, _, err := f.Report(ctx, arbitrator.ReportBody{Partition: []string{"n1"}, Running: 0}, time.Now)
		cancel()
		if !errors.Is(err, arbitrator.ErrNoAnswer) {
			t.Fatalf("forged report %d as n1 from n2's files: %+v, %v", i, g, err)
		}
	}
	st := status()
	if st.Counters.NotOwnKey < 2 {
		t.Fatalf("counters: %+v", st.Counters)
	}
	for _, n := range st.Clusters[0].Nodes {
		if n.Node == "n1" && len(n.Partition) != 2 {
			t.Fatalf("n1's last report is the forged one: %+v", n)
		}
	}
	if r := arb("status"); !strings.Contains(r.Out, "NOT SEALED WITH THEIR NODE'S KEY") || !strings.Contains(r.Out, "node key)") {
		t.Fatalf("arbitrator status:\n%s", r)
	}
}
