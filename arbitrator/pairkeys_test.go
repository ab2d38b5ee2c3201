package arbitrator

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"net"
	"slices"
	"testing"
	"time"

	"haven/config"
	"haven/quorum"
)

func newKey(t testing.TB) *ecdh.PrivateKey {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// pairOf are the keys of node priv with the arbitrator arb, from the node's
// side (what its files give).
func pairOf(t testing.TB, secret []byte, priv *ecdh.PrivateKey, arb *ecdh.PublicKey) keys {
	t.Helper()
	k, err := pairKeys(secret, priv, arb)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The pairwise key of n1 and the arbitrator is the same from both ends, and
// nothing else opens n1's report: n2's key pair with the arbitrator, the
// secret alone, another secret, the header of another cluster, node or run
// (a replay of another run), the flag of the type byte cleared.
func TestPairWire(t *testing.T) {
	secret, _ := hex.DecodeString(testSecret)
	arb, n1, n2 := newKey(t), newKey(t), newKey(t)
	nodeSide := pairOf(t, secret, n1, arb.PublicKey())
	arbSide := pairOf(t, secret, arb, n1.PublicKey())
	body := ReportBody{Partition: []string{"n1"}, Running: 1}
	frame, err := seal(nodeSide, typeReport, "prod", "n1", 7, 3, body)
	if err != nil {
		t.Fatal(err)
	}
	h, ct, err := parseHeader(frame)
	if err != nil || !h.pair || h.typ != typeReport {
		t.Fatalf("header: %+v, %v", h, err)
	}
	var got ReportBody
	if err := open(arbSide, h, ct, &got); err != nil || got.Running != 1 {
		t.Fatalf("the arbitrator does not open n1's report: %v", err)
	}
	other := "00" + testSecret[2:]
	otherSecret, _ := hex.DecodeString(other)
	for name, k := range map[string]keys{
		"n2's pair":          pairOf(t, secret, arb, n2.PublicKey()),
		"the secret alone":   {secret: secret},
		"another secret":     pairOf(t, otherSecret, arb, n1.PublicKey()),
		"n2's files as n1":   pairOf(t, secret, n2, arb.PublicKey()),
		"another arbitrator": pairOf(t, secret, newKey(t), n1.PublicKey()),
	} {
		if err := open(k, h, ct, &got); err == nil {
			t.Errorf("%s opened n1's report", name)
		}
	}
	// the header of another cluster, node, run, sequence, or of a frame
	// sealed with the secret alone
	for name, raw := range map[string][]byte{
		"another cluster": appendHeader(nil, typeReport|typePair, "test", "n1", 7, 3),
		"another node":    appendHeader(nil, typeReport|typePair, "prod", "n2", 7, 3),
		"another run":     appendHeader(nil, typeReport|typePair, "prod", "n1", 8, 3),
		"another seq":     appendHeader(nil, typeReport|typePair, "prod", "n1", 7, 4),
		"flag cleared":    appendHeader(nil, typeReport, "prod", "n1", 7, 3),
	} {
		re := append(raw, ct...)
		h2, ct2, err := parseHeader(re)
		if err != nil {
			t.Fatal(err)
		}
		k := arbSide
		if !h2.pair {
			k = keys{secret: secret}
		}
		if h2.node == "n2" {
			k = pairOf(t, secret, arb, n2.PublicKey())
		}
		if err := open(k, h2, ct2, &got); err == nil {
			t.Errorf("%s: n1's report opened", name)
		}
	}
	// a grant sealed with the secret alone (by any holder of the secret)
	// does not answer a pairwise report
	g, _ := seal(keys{secret: secret}, typeGrant, "prod", "n1", 7, 3, GrantBody{Granted: true})
	hg, cg, _ := parseHeader(g)
	var gb GrantBody
	if err := open(nodeSide, hg, cg, &gb); err == nil {
		t.Fatal("a grant sealed with the secret alone answered a pairwise report")
	}
}

// keyedCluster is an arbitrator serving prod with the node keys of n1 and
// n2, and the files of each node (its reporter).
type keyedCluster struct {
	s      *Server
	clk    *fakeNow
	arb    *ecdh.PrivateKey
	n1, n2 *ecdh.PrivateKey
}

func startKeyed(t *testing.T, mode string) *keyedCluster {
	kc := &keyedCluster{arb: newKey(t), n1: newKey(t), n2: newKey(t)}
	kc.s, kc.clk = startServerConf(t, map[string]config.ArbitratorCluster{"prod": {Secret: testSecret, NodeKeysMode: mode,
		NodeKeys: map[string][]byte{"n1": kc.n1.PublicKey().Bytes(), "n2": kc.n2.PublicKey().Bytes()}}}, kc.arb)
	return kc
}

// keyed is the reporter of node with the private key priv (its own, or
// another node's).
func (kc *keyedCluster) keyed(node string, priv *ecdh.PrivateKey, inc uint64) *Reporter {
	r := reporter(kc.s, node, testSecret, inc)
	r.NodeKey, r.ArbitratorKey = priv, kc.arb.PublicKey()
	return r
}

// cut brings the vote to n1 after a cut of the link: n1 runs the service.
func cut(t *testing.T, s *Server, clk *fakeNow, n1, n2 *Reporter) {
	t.Helper()
	clk.add(Lease + quorum.LeaseMargin)
	report(t, n1, 1, "n1")
	report(t, n2, 0, "n2")
	clk.add(time.Second)
	if g, err := report(t, n1, 1, "n1"); err != nil || !g.Granted {
		t.Fatalf("n1 (running the service) not granted after the cut: %+v, %v", g, err)
	}
	if g, err := report(t, n2, 0, "n2"); err != nil || g.Granted {
		t.Fatalf("n2 granted after the cut: %+v, %v", g, err)
	}
}

// The insider on n2 (the cluster secret, n2's node key, the arbitrator's
// public key) reports as n1 that n1 hears n2, so that the winner grows to
// both nodes and n2 gets the vote too: a split brain. Without node keys
// the arbitrator takes the forged report and grants n2; with them the
// forgery is refused, whether sealed with the secret alone or with n2's
// key pair, counted, and the vote stays with n1, which keeps its grant.
func TestServerRefusesReportAsAnotherNode(t *testing.T) {
	t.Run("without node keys, the forgery works", func(t *testing.T) {
		s, clk := startServer(t, map[string]string{"prod": testSecret})
		n1, n2 := reporter(s, "n1", testSecret, 1), reporter(s, "n2", testSecret, 1)
		cut(t, s, clk, n1, n2)
		if g, err := report(t, reporter(s, "n1", testSecret, 1<<40), 0, "n1", "n2"); err != nil || !g.Granted {
			t.Fatalf("forged report: %+v, %v", g, err)
		}
		if g, _ := report(t, n2, 0, "n1", "n2"); !g.Granted {
			t.Fatalf("the forgery did not give n2 the vote: %+v (the test does not show what keys stop)", g)
		}
	})
	kc := startKeyed(t, "require")
	n1, n2 := kc.keyed("n1", kc.n1, 1), kc.keyed("n2", kc.n2, 1)
	cut(t, kc.s, kc.clk, n1, n2)
	forgeries := map[string]*Reporter{
		"the secret alone": reporter(kc.s, "n1", testSecret, 1<<40),
		"n2's key pair":    kc.keyed("n1", kc.n2, 1<<40+1),
	}
	for name, f := range forgeries {
		if g, err := report(t, f, 0, "n1", "n2"); err == nil {
			t.Errorf("a report as n1 sealed with %s was answered: %+v", name, g)
		}
	}
	if g, _ := report(t, n2, 0, "n1", "n2"); g.Granted {
		t.Fatalf("n2 got the vote: %+v", g)
	}
	if g, err := report(t, n1, 1, "n1"); err != nil || !g.Granted || !g.Exclusive {
		t.Fatalf("the real n1 lost its grant: %+v, %v", g, err)
	}
	st := kc.s.Status()
	if st.Counters.NotOwnKey != 2 || st.Counters.Rejected != 2 || !slices.Equal(st.Clusters[0].Winner, []string{"n1"}) {
		t.Fatalf("status: %+v", st)
	}
	for _, n := range st.Clusters[0].Nodes {
		if !n.NodeKey || (n.Node == "n1" && !slices.Equal(n.Partition, []string{"n1"})) {
			t.Fatalf("node seen: %+v", n)
		}
	}
}

// The steps of a migration talk: with node_keys_mode "accept" the
// arbitrator takes a listed node's report sealed with the secret alone (a
// node that lacks the arbitrator's key yet) and a pairwise one, and
// answers each in kind; a node sealing pairwise to an arbitrator that does
// not list its key gets no answer (its key is missing there: counted).
func TestServerNodeKeysModes(t *testing.T) {
	kc := startKeyed(t, "accept")
	kc.clk.add(Lease + quorum.LeaseMargin)
	if g, err := report(t, reporter(kc.s, "n1", testSecret, 1), 0, "n1", "n2"); err != nil || !g.Granted {
		t.Fatalf("accept: n1 with the secret alone: %+v, %v", g, err)
	}
	if g, err := report(t, kc.keyed("n2", kc.n2, 1), 0, "n1", "n2"); err != nil || !g.Granted {
		t.Fatalf("accept: n2 with its key: %+v, %v", g, err)
	}
	// accept takes n2's key for n2 only
	if _, err := report(t, kc.keyed("n1", kc.n2, 2), 0, "n1", "n2"); err == nil {
		t.Fatal("accept: n2's key pair opened a report as n1")
	}
	// an arbitrator listing no key of the node
	s, clk := startServerConf(t, map[string]config.ArbitratorCluster{"prod": {Secret: testSecret, NodeKeysMode: "require"}}, kc.arb)
	clk.add(Lease + quorum.LeaseMargin)
	r := reporter(s, "n1", testSecret, 1)
	r.NodeKey, r.ArbitratorKey = kc.n1, kc.arb.PublicKey()
	if _, err := report(t, r, 0, "n1"); err == nil {
		t.Fatal("a pairwise report of a node not listed was answered")
	}
	if g, err := report(t, reporter(s, "n1", testSecret, 2), 0, "n1"); err != nil || !g.Granted {
		t.Fatalf("the secret alone, no key listed: %+v, %v", g, err)
	}
	if st := s.Status(); st.Counters.NotOwnKey != 1 {
		t.Fatalf("counters: %+v", st.Counters)
	}
	// node keys without the arbitrator's key pair do not start
	if _, err := Listen(Config{Conf: &config.ArbitratorConf{Listen: "127.0.0.1:0", Clusters: map[string]config.ArbitratorCluster{"prod": {Secret: testSecret,
		NodeKeys: map[string][]byte{"n1": kc.n1.PublicKey().Bytes()}}}}}); err == nil {
		t.Fatal("node keys without the arbitrator's key pair")
	}
}

// Hostile bytes against an arbitrator with node keys: never a crash, and
// an answer only to the one authentic report.
func FuzzHandlePair(f *testing.F) {
	secret, _ := hex.DecodeString(testSecret)
	arb, n1 := newKey(f), newKey(f)
	good, _ := seal(pairOf(f, secret, n1, arb.PublicKey()), typeReport, "prod", "n1", 1, 1, ReportBody{Partition: []string{"n1"}, SentUnixMs: time.Now().UnixMilli()})
	plain, _ := seal(keys{secret: secret}, typeReport, "prod", "n1", 1, 1, ReportBody{Partition: []string{"n1"}, SentUnixMs: time.Now().UnixMilli()})
	f.Add(good)
	f.Add(plain)
	f.Add(append([]byte{magic, version, typeReport | typePair, 4, 'p', 'r', 'o', 'd', 2, 'n', '2'}, make([]byte, 40)...))
	sv, err := newServed("prod", config.ArbitratorCluster{Secret: testSecret, NodeKeysMode: "require", NodeKeys: map[string][]byte{"n1": n1.PublicKey().Bytes()}}, arb)
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{now: time.Now, served: map[string]*served{"prod": sv}, books: map[string]*quorum.LeaseBook{"prod": quorum.NewLeaseBook(quorum.LeaseConfig{Lease: Lease, Fresh: Fresh}, time.Now())},
		last: map[runKey]uint64{}, nodes: map[string]map[string]*NodeSeen{"prod": {}}, log: zapNop()}
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	f.Fuzz(func(t *testing.T, b []byte) {
		if out := s.handle(b, from); out != nil && !slices.Equal(b, good) {
			t.Fatalf("answered %x", b)
		}
	})
}

// TestServerRemovedMemberRefused: in require, with node keys listed, a
// node arbitrator.toml does not list (a member removed from the cluster,
// whose files still hold the secret and its own key pair) gets no answer,
// whether it seals with the secret alone or with its own key pair, and
// each refusal is counted; in accept the secret alone is still taken.
func TestServerRemovedMemberRefused(t *testing.T) {
	kc := startKeyed(t, "require")
	kc.clk.add(Lease + quorum.LeaseMargin)
	n3 := newKey(t)
	if _, err := report(t, reporter(kc.s, "n3", testSecret, 1), 0, "n3", "n1"); err == nil {
		t.Fatal("require: the removed n3 with the secret alone was answered")
	}
	if _, err := report(t, kc.keyed("n3", n3, 2), 0, "n3", "n1"); err == nil {
		t.Fatal("require: the removed n3 with its own key pair was answered")
	}
	if st := kc.s.Status(); st.Counters.NotOwnKey != 2 {
		t.Fatalf("counters: %+v", st.Counters)
	}
	if g, err := report(t, kc.keyed("n1", kc.n1, 1), 0, "n1", "n2"); err != nil || !g.Granted {
		t.Fatalf("require: n1 with its key: %+v, %v", g, err)
	}
	acc := startKeyed(t, "accept")
	acc.clk.add(Lease + quorum.LeaseMargin)
	if _, err := report(t, reporter(acc.s, "n3", testSecret, 1), 0, "n3"); err != nil {
		t.Fatalf("accept: a node not listed with the secret alone: %v", err)
	}
}
