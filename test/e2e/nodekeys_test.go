package e2e

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// Per-node keys turned on in a running cluster without an outage, as
// docs/operations.md ("Per-node keys") says: every node makes its key
// pair, then three rolling passes over cluster.toml (the keys with
// node_keys_mode "accept", then "send", then the default "require"), each
// node restarted in turn. After every restart every node sees every other
// up; the service runs on, the same process, on the same node. Then a
// node that seals with the secret alone is refused by the others, and a
// node whose cluster.toml lists another key as its own refuses to start
// (exit 2, naming the file, the line and the key).
func TestNodeKeysRollingMigration(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{})
	sameWeb := webOnN1(t, c, names)

	base := readFile(t, c["n1"].root+"/etc/cluster.toml")
	keys := "\n[node_keys]\n"
	for _, n := range names {
		keys += c[n].must("nodemgr", "key", "generate")
	}
	var conf string
	for _, mode := range []string{"accept", "send", ""} {
		conf = base + keys
		if mode != "" {
			conf = strings.Replace(conf, "[cluster]\n", "[cluster]\nnode_keys_mode = \""+mode+"\"\n", 1)
		}
		for _, n := range names {
			writeClusterToml(t, c[n], conf)
			c[n].must("nodemgr", "daemon", "restart")
			for _, a := range names {
				for _, b := range names {
					if a != b {
						waitFor(t, 20*time.Second, a+" sees "+b+" up after "+n+" restarted in mode "+mode,
							func() bool { return peerStatus(c[a], b) == dataset.NodeUp })
					}
				}
			}
		}
	}
	waitFor(t, 10*time.Second, "web up on n1 only", upOnlyOn(c["n3"], "web", "n1"))
	sameWeb("the migration")

	// n2 sealing with the secret alone (its cluster.toml back in the
	// accept step) is refused by the others, which require n2's key
	c["n2"].must("nodemgr", "daemon", "stop")
	writeClusterToml(t, c["n2"], strings.Replace(conf, "[cluster]\n", "[cluster]\nnode_keys_mode = \"accept\"\n", 1))
	c["n2"].startDaemon()
	waitFor(t, 10*time.Second, "n1 refuses n2's frames sealed with the secret alone", func() bool {
		log := readFile(t, c["n1"].root+"/log/node.log")
		return strings.Contains(log, `claiming to be \"n2\"`) && strings.Contains(log, "not sealed with its sender's node key")
	})
	if peerStatus(c["n1"], "n2") == dataset.NodeUp {
		t.Error("n1 sees n2 up while it refuses its frames")
	}
	c["n2"].must("nodemgr", "daemon", "stop")
	writeClusterToml(t, c["n2"], conf)
	c["n2"].startDaemon()
	waitFor(t, 20*time.Second, "n1 sees n2 up again", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })

	other, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	own := strings.TrimSpace(c["n3"].must("nodemgr", "key", "show"))
	wrong := strings.Replace(conf, own, `n3 = "`+base64.StdEncoding.EncodeToString(other.PublicKey().Bytes())+`"`, 1)
	c["n3"].must("nodemgr", "daemon", "stop")
	writeClusterToml(t, c["n3"], wrong)
	r := c["n3"].run("nodemgr", "daemon", "start")
	line := strconv.Itoa(strings.Count(wrong[:strings.Index(wrong, "\nn3 = \""+base64.StdEncoding.EncodeToString(other.PublicKey().Bytes()))+1], "\n") + 1)
	if r.Code != 2 || !strings.Contains(r.String(), "cluster.toml:"+line+": node_keys.n3: not the public key of this node's") {
		t.Errorf("a wrong own key: exit %d, want 2 naming cluster.toml:%s node_keys.n3: %s", r.Code, line, r)
	}
}
