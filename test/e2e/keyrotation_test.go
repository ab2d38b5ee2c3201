package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/arbitrator"
	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// Key rotation and member removal, end to end on real daemons, each
// following the procedure of docs/operations.md step by step ("Per-node
// keys": "Replacing a node's key", "Removing a member"; "Admin-signed
// configs": "Rotating an admin key", "Revoking a stolen admin key").

// keyedCluster makes names on loopback with a key pair each, listed in
// [node_keys] (node_keys_mode require), the defaults of
// maintenance_grace_period and rejoin_grace_period (the procedures count
// on them), nodeExtra appended to each node.toml, the cluster.toml
// rewritten by edit (nil: as is); it starts the daemons and returns the
// nodes and the cluster.toml.
func keyedCluster(t *testing.T, names []string, nodeExtra string, edit func(conf string) string) (map[string]*node, string) {
	t.Helper()
	c := newCluster(t, names, clusterOpts{})
	conf := readFile(t, c[names[0]].root+"/etc/cluster.toml") + "\n[node_keys]\n"
	for _, n := range names {
		conf += c[n].must("nodemgr", "key", "generate")
	}
	if edit != nil {
		conf = edit(conf)
	}
	for _, n := range names {
		p := c[n].root + "/etc/node.toml"
		nt := strings.NewReplacer(`maintenance_grace_period = "6s"`, `maintenance_grace_period = "60s"`,
			`rejoin_grace_period = "5s"`, `rejoin_grace_period = "90s"`).Replace(readFile(t, p)) + nodeExtra
		if err := os.WriteFile(p, []byte(nt), 0o600); err != nil {
			t.Fatal(err)
		}
		writeClusterToml(t, c[n], conf)
	}
	startNodes(t, c, names)
	return c, conf
}

// webWatch watches web's pid file on every node from outside the cluster
// (procWatch): stopped reports the samples where it ran nowhere, and both
// those where it ran on two nodes.
func webWatch(t *testing.T, c map[string]*node, names []string) (check func(during string)) {
	files := map[string]string{}
	for _, n := range names {
		files[n] = c[n].root + "/var/services/web/main.pid"
	}
	w := watchProcs(t, files)
	w.moreRounds(3)
	return func(during string) {
		t.Helper()
		w.moreRounds(3)
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.both) > 0 {
			t.Fatalf("web ran on two nodes during %s: %v", during, w.both[:min(5, len(w.both))])
		}
		on := map[time.Time]bool{}
		for _, ts := range w.alive {
			for _, s := range ts {
				on[s] = true
			}
		}
		for _, at := range w.at {
			if !on[at] {
				t.Fatalf("web ran nowhere at %s, during %s", at.Format("15:04:05.000"), during)
			}
		}
	}
}

// allUp waits until every node of names sees every other up, out of
// rejoin and not frozen.
func allUp(t *testing.T, c map[string]*node, names []string, after string) {
	t.Helper()
	for _, a := range names {
		for _, b := range names {
			if a != b {
				waitFor(t, 30*time.Second, a+" sees "+b+" up "+after, func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
			}
		}
		waitFor(t, 30*time.Second, a+" out of rejoin, not frozen, "+after, func() bool {
			ni := c[a].status().Nodes[a]
			return ni.Monitor == dataset.NodeIdle && !ni.Frozen
		})
	}
}

// TestNodeKeyReplacedWithoutAStop replaces n1's key while web runs on n1
// (docs/operations.md, "Replacing a node's key"): n1's daemon stopped
// (its services keep running, the peers see it in maintenance), a new key
// pair, the new line in every cluster.toml, the other daemons restarted
// one at a time, n1's daemon started, all within maintenance_grace_period.
// A watcher outside the cluster sees web's process run throughout, never
// on two nodes, and it is the same process. The old key is refused after:
// n1 started again with its old node.key is not heard by the others.
func TestNodeKeyReplacedWithoutAStop(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c, conf := keyedCluster(t, names, "", nil)
	sameWeb := webOnN1(t, c, names)
	watch := webWatch(t, c, names)

	// 1. stop n1's daemon: its services keep running
	c["n1"].must("nodemgr", "daemon", "stop")
	// 2. a new key pair for n1, the old one kept aside
	key := c["n1"].root + "/etc/node.key"
	if err := os.Rename(key, key+".old"); err != nil {
		t.Fatal(err)
	}
	line := c["n1"].must("nodemgr", "key", "generate")
	at := strings.Index(conf, "[node_keys]\n")
	old := regexp.MustCompile(`(?m)^n1 = ".*"\n`).FindString(conf[at:])
	if at < 0 || old == "" || old == line {
		t.Fatalf("n1's line %q, new %q", old, line)
	}
	newConf := conf[:at] + strings.Replace(conf[at:], old, line, 1)
	// 3. the new line on every member; the others restarted one at a time
	for _, n := range names {
		writeClusterToml(t, c[n], newConf)
	}
	for _, n := range []string{"n2", "n3"} {
		c[n].must("nodemgr", "daemon", "restart")
		waitFor(t, 30*time.Second, "n2 and n3 hear each other after "+n+"'s restart", func() bool {
			return peerStatus(c["n2"], "n3") == dataset.NodeUp && peerStatus(c["n3"], "n2") == dataset.NodeUp
		})
	}
	// 4. n1's daemon started with its new key
	c["n1"].startDaemon()
	allUp(t, c, names, "after the key replacement")
	waitFor(t, 10*time.Second, "web up on n1 only", upOnlyOn(c["n3"], "web", "n1"))
	sameWeb("the key replacement")
	watch("the key replacement")

	// the old key is refused: n1 back on it (a thief's copy of its old
	// files) is not heard, and the others say why
	c["n1"].must("nodemgr", "daemon", "stop")
	if err := os.Rename(key+".old", key); err != nil {
		t.Fatal(err)
	}
	writeClusterToml(t, c["n1"], conf)
	from := len(nodeLog(t, c["n2"]))
	c["n1"].startDaemon()
	waitFor(t, 20*time.Second, "n2 refuses n1's frames sealed with its old key", func() bool {
		return strings.Contains(nodeLog(t, c["n2"])[from:], `cannot authenticate (wrong cluster secret or cluster name, or damaged); or sealed with a node key that is not its sender's`)
	})
	if peerStatus(c["n2"], "n1") == dataset.NodeUp && c["n2"].status().Nodes["n1"].Monitor != dataset.NodeMaintenance {
		t.Error("n2 hears n1 on its old key")
	}
}

// TestMemberRemovedIsRefused removes n3 from a keyed cluster with a disk
// heartbeat and a one-vote arbitrator with keys (docs/operations.md,
// "Removing a member"), while n3's daemon goes on running with its old
// files (a stolen host): n3 out of the arbitrator's node_keys (restarted),
// then n3's lines removed from [nodes] and [node_keys] on n1 and n2, each
// restarted in turn. From its restart each refuses n3's frames (not a
// member, counted); n3's files writing the disk as n1 are refused by n2
// (counted); the arbitrator answers neither n3's daemon nor a report as
// n3 with the secret alone (counted); web runs on, the same process, on
// n1.
func TestMemberRemovedIsRefused(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	diskFile := filepath.Join(t.TempDir(), "hb.disk")
	ab := newArbBed(t)
	c, conf := keyedCluster(t, names, "\n[hb.disk]\npath = \""+diskFile+"\"\ntimeout = \"2s\"\n", ab.join)
	sameWeb := webOnN1(t, c, names)
	waitFor(t, 20*time.Second, "n2 reads n1's and n3's slots advancing", func() bool {
		st := c["n2"].status()
		return st.Disk != nil && st.Disk.Slots["n1"].Alive && st.Disk.Slots["n3"].Alive
	})
	waitFor(t, 20*time.Second, "the arbitrator hears n3's reports, sealed with its key", func() bool { return ab.reports("n3", true) })
	n3Line := regexp.MustCompile(`(?m)^n3 = ".*"\n`)
	newConf := n3Line.ReplaceAllString(conf, "")
	if strings.Count(conf, "\nn3 = ") != 2 || strings.Contains(newConf, "\nn3 = ") {
		t.Fatalf("n3's lines in cluster.toml:\n%s", conf)
	}
	// the arbitrator first: n3 out of its node_keys, restarted
	writeFile(t, ab.conf, n3Line.ReplaceAllString(readFile(t, ab.conf), ""))
	os.Chmod(ab.conf, 0o600)
	restartArbitrator(t, ab.arb)
	for _, n := range []string{"n1", "n2"} {
		writeClusterToml(t, c[n], newConf)
		before := c[n].daemonStatus().HB.Rejected
		c[n].must("nodemgr", "daemon", "restart")
		waitFor(t, 20*time.Second, n+" refuses n3's frames from its restart on", func() bool {
			return c[n].daemonStatus().HB.Rejected > before && strings.Contains(nodeLog(t, c[n]), `from \"n3\", not a cluster member`)
		})
		if _, ok := c[n].status().Nodes["n3"]; ok {
			t.Errorf("%s lists the removed n3", n)
		}
	}
	waitFor(t, 30*time.Second, "n1 and n2 hear each other", func() bool {
		return peerStatus(c["n1"], "n2") == dataset.NodeUp && peerStatus(c["n2"], "n1") == dataset.NodeUp
	})
	// n3's files (its old cluster.toml, its node.key) write n1's slot
	before := c["n2"].status().Disk.NotOwnKey
	stop := startDiskAttacker(t, chaos.DiskAttack{Insider: &chaos.DiskInsider{Path: diskFile, ClusterToml: c["n3"].root + "/etc/cluster.toml",
		Node: "n3", NodeKey: c["n3"].root + "/etc/node.key", As: "n1", Echo: []string{"n2"}, Every: 250 * time.Millisecond}})
	waitFor(t, 20*time.Second, "n2 refuses n1's slot written by n3's files", func() bool {
		return c["n2"].status().Disk.NotOwnKey > before
	})
	stop()
	waitFor(t, 20*time.Second, "n2 reads the real n1's slot advancing again", func() bool { return c["n2"].status().Disk.Slots["n1"].Alive })
	// n3's reports to the arbitrator: its daemon's (sealed with its key)
	// and the secret alone from its files get no answer, and count
	if ab.reports("n3", false) {
		t.Error("the arbitrator takes the reports of the removed n3")
	}
	ab.forge("n3")
	waitFor(t, 20*time.Second, "the arbitrator hears n1 and n2", func() bool { return ab.reports("n1", true) && ab.reports("n2", true) })
	waitFor(t, 10*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	sameWeb("the removal")
}

// TestAdminKeyRotatedAndRevoked: web signed by alice; bob's key added on
// every node (a restart each), web signed again by bob, alice's line
// removed node by node (docs/operations.md, "Rotating an admin key"). As
// soon as n1 has the new cluster.toml, a config signed by alice (made on
// n2, which still lists her) is refused by n1 (unknown key: its status and
// log say so, its file keeps bob's), and on n1 itself; once every node
// has it, a config signed again by bob above the thief's serial
// ("Revoking a stolen admin key") is taken everywhere. web runs
// throughout, the same process.
func TestAdminKeyRotatedAndRevoked(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	ws := t.TempDir() // the admins' workstation
	alice, bob := filepath.Join(ws, "alice.key"), filepath.Join(ws, "bob.key")
	aliceLine := c["n1"].must("svcmgr", "key", "generate", "--name", "alice", "--key", alice)
	bobLine := c["n1"].must("svcmgr", "key", "generate", "--name", "bob", "--key", bob)
	base := readFile(t, c["n1"].root+"/etc/cluster.toml") + "\n[admin_keys]\n"
	for _, n := range names {
		writeClusterToml(t, c[n], base+aliceLine)
	}
	startNodes(t, c, names)
	file := filepath.Join(ws, "web.toml")
	writeFile(t, file, testbed.HAService(testbed.NodeList(names), ""))
	c["n1"].must("svcmgr", "-s", "web", "sign", file, "--key", alice, "--cluster", "test")
	c["n1"].must("svcmgr", "-s", "web", "create", "--config", file)
	waitFor(t, 20*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	pid := strings.TrimSpace(readFile(t, c["n1"].root+"/var/services/web/main.pid"))
	sameWeb := func(during string) {
		t.Helper()
		if now := strings.TrimSpace(readFile(t, c["n1"].root+"/var/services/web/main.pid")); now != pid {
			t.Fatalf("web's app was restarted during %s: pid %s, then %s", during, pid, now)
		}
	}
	restart := func(n, conf string) {
		writeClusterToml(t, c[n], conf)
		c[n].must("nodemgr", "daemon", "restart")
		allUp(t, c, names, "after "+n+"'s restart")
	}
	signedBy := func(n, who string) bool {
		return strings.Contains(readFile(t, c[n].root+"/etc/services/web.toml"), "# haven-signature: "+who+" ")
	}

	// 1. bob's line on every node
	for _, n := range names {
		restart(n, base+aliceLine+bobLine)
	}
	// 2. every config alice signed, signed again by bob
	c["n1"].must("svcmgr", "-s", "web", "sign", "--key", bob)
	for _, n := range names {
		waitFor(t, 20*time.Second, n+" holds web signed by bob", func() bool { return signedBy(n, "bob") })
	}
	// 3. alice's line removed, node by node: n1 first
	restart("n1", base+bobLine)
	if r := c["n1"].run("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=21s", "--key", alice); r.Code != 2 || !strings.Contains(r.String(), "unknown key") {
		t.Fatalf("a set signed by the revoked alice on n1: want exit 2 config_refused: unknown key, got %s", r)
	}
	// alice's key stolen: a config she signs is taken by n2 (which still
	// lists her), and refused by n1
	// (n2 installs it and waits in vain for n1's confirmation: exit 1)
	if r := c["n2"].run("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=22s", "--key", alice); r.Code == 0 || !strings.Contains(r.Err, "n1 did not confirm it") {
		t.Fatalf("alice's set on n2: want it installed there and not confirmed by n1, got %s", r)
	}
	waitFor(t, 20*time.Second, "n1 refuses alice's config from n2 and says so", func() bool {
		e := c["n1"].status().Services["web"].ConfigError
		return strings.Contains(e, "the config from n2 is refused here") && strings.Contains(e, "config_refused: unknown key")
	})
	if !signedBy("n1", "bob") || strings.Contains(readFile(t, c["n1"].root+"/etc/services/web.toml"), "22s") {
		t.Fatal("n1 did not keep bob's config")
	}
	if log := nodeLog(t, c["n1"]); !strings.Contains(log, "config_refused") {
		t.Error("n1's log does not say it refused alice's config")
	}
	// 4. n2 too; bob signs again, above any serial the thief may have
	// used: taken everywhere, alice's config gone from n2
	restart("n2", base+bobLine)
	c["n1"].must("svcmgr", "-s", "web", "sign", "--key", bob, "--serial", strconv.FormatInt(time.Now().Unix()+86400, 10))
	for _, n := range names {
		waitFor(t, 20*time.Second, n+" takes bob's config", func() bool {
			text := readFile(t, c[n].root+"/etc/services/web.toml")
			return signedBy(n, "bob") && !strings.Contains(text, "22s") && c[n].status().Services["web"].ConfigError == ""
		})
	}
	waitFor(t, 10*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	sameWeb("the rotation of the admin keys")
}

// arbBed is a one-vote arbitrator on loopback with its key pair, for the
// cluster "test" of newCluster.
type arbBed struct {
	t    *testing.T
	arb  func(args ...string) testbed.Result
	addr string
	key  string // its line for cluster.toml: key = "..."
	conf string // arbitrator.toml
}

func newArbBed(t *testing.T) *arbBed {
	t.Helper()
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	ab := &arbBed{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port), conf: filepath.Join(root, "etc", "arbitrator.toml")}
	ab.arb = func(args ...string) testbed.Result {
		r, err := testbed.Run(filepath.Join(binDir, "nodemgr"), root, append([]string{"arbitrator"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	gen := ab.arb("key", "generate")
	if gen.Code != 0 {
		t.Fatalf("arbitrator key generate: %s", gen)
	}
	ab.key = gen.Out
	return ab
}

// join is a keyedCluster edit: quorum on, the arbitrator in cluster.toml
// with its key, and the arbitrator started with the cluster's secret and
// node keys.
func (ab *arbBed) join(conf string) string {
	secret := regexp.MustCompile(`secret = "([0-9a-f]{64})"`).FindStringSubmatch(conf)
	keys := conf[strings.Index(conf, "[node_keys]\n")+len("[node_keys]\n"):]
	writeFile(ab.t, ab.conf, fmt.Sprintf("[arbitrator]\nlisten = %q\n\n[cluster.test]\nsecret = %q\n\n[cluster.test.node_keys]\n%s", ab.addr, secret[1], keys))
	os.Chmod(ab.conf, 0o600)
	if r := ab.arb("start"); r.Code != 0 {
		ab.t.Fatalf("arbitrator start: %s", r)
	}
	ab.t.Cleanup(func() { ab.arb("stop") })
	return strings.Replace(conf, "[cluster]\n", "[cluster]\nquorum = true\n", 1) + fmt.Sprintf("\n[arbitrator.a1]\nuri = \"haven://%s\"\ntimeout = \"1s\"\n", ab.addr) + ab.key
}

// status is the arbitrator's status.
func (ab *arbBed) status() arbitrator.Status {
	ab.t.Helper()
	var st arbitrator.Status
	if r := ab.arb("status", "--format", "json"); json.Unmarshal([]byte(r.Out), &st) != nil {
		ab.t.Fatalf("arbitrator status: %s", r)
	}
	return st
}

// reports tells whether the arbitrator holds a report of node (sealed
// with its node key when keyed).
func (ab *arbBed) reports(node string, keyed bool) bool {
	for _, cl := range ab.status().Clusters {
		for _, n := range cl.Nodes {
			if n.Node == node && (!keyed || n.NodeKey) {
				return true
			}
		}
	}
	return false
}

// forge reports as node with the cluster secret alone (what its files
// give once the arbitrator lists no key of it): no answer, counted.
func (ab *arbBed) forge(node string) {
	ab.t.Helper()
	secret := regexp.MustCompile(`secret = "([0-9a-f]{64})"`).FindStringSubmatch(readFile(ab.t, ab.conf))
	sec, _ := hex.DecodeString(secret[1])
	before := ab.status().Counters.NotOwnKey
	r := &arbitrator.Reporter{Addr: ab.addr, Cluster: "test", Node: node, Secret: sec, Inc: uint64(time.Now().UnixNano())}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if g, _, err := r.Report(ctx, arbitrator.ReportBody{Partition: []string{node, "n1"}}, time.Now); !errors.Is(err, arbitrator.ErrNoAnswer) {
		ab.t.Fatalf("a report as %s with the secret alone: %+v, %v", node, g, err)
	}
	// the report is a datagram the arbitrator may not have read yet when
	// the reporter gave up waiting for an answer (a loaded host)
	waitFor(ab.t, 10*time.Second, "the arbitrator counts the report as "+node+" refused", func() bool {
		return ab.status().Counters.NotOwnKey > before
	})
}
