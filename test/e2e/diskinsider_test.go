package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// One member's files on the shared disk (docs/security.md, "One node's
// files stolen", "The shared disk"): the holder of n2's cluster.toml and
// node.key, writing the disk of [hb.disk] as n1, with real daemons on
// loopback sharing a file as the disk (fence = true, quorum on, a crash
// command that records its node). Run twice side by side: with per-node
// keys the forgeries are refused; without them (the check off) the same
// forgeries are taken, which shows the test can fail.
//
//  1. A fence of n3 in n1's name, every 250 ms for 5 s, echoing n3's
//     newest block: keyed, n3 never runs its crash command and counts the
//     blocks refused (status disk.not_own_key); unkeyed, n3 obeys it.
//  2. n1's host dies (web ran there) and the insider keeps writing beats
//     as n1 that echo n2's and n3's newest blocks: keyed, the survivors
//     count n1's slot stalled, fence it and start web on n2 or n3;
//     unkeyed, n1's slot advances, no fence is done and web stays down
//     for 20 s.
func TestDiskInsiderWritesAsAnotherMember(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own (testbed.FreePort); mostly waits
	for _, keyed := range []bool{true, false} {
		name := "keyed"
		if !keyed {
			name = "without keys"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			diskInsider(t, keyed)
		})
	}
}

func diskInsider(t *testing.T, keyed bool) {
	names := []string{"n1", "n2", "n3"}
	work := t.TempDir()
	diskFile := filepath.Join(work, "hb.disk")
	c := newCluster(t, names, clusterOpts{extra: `split_action = "stop"` + "\n" + `crash_command = "echo NODE >> ` + work + `/crashed"`})
	conf := strings.Replace(readFile(t, c["n1"].root+"/etc/cluster.toml"), "[cluster]\n", "[cluster]\nquorum = true\n", 1)
	if keyed {
		conf += "\n[node_keys]\n"
		for _, n := range names {
			conf += c[n].must("nodemgr", "key", "generate")
		}
	}
	for _, n := range names {
		p := c[n].root + "/etc/node.toml"
		nt := strings.Replace(readFile(t, p), "NODE", n, 1) + "\n[hb.disk]\npath = \"" + diskFile + "\"\nfence = true\ntimeout = \"2s\"\n"
		if err := os.WriteFile(p, []byte(nt), 0o600); err != nil {
			t.Fatal(err)
		}
		writeClusterToml(t, c[n], conf)
	}
	startNodes(t, c, names)
	sameWeb := webOnN1(t, c, names)
	waitFor(t, 20*time.Second, "n3 reads n1's slot advancing", func() bool {
		st := c["n3"].status()
		return st.Disk != nil && st.Disk.Slots["n1"].Alive
	})
	insider := func(as string, echo, fence []string) func() {
		in := &chaos.DiskInsider{Path: diskFile, ClusterToml: c["n2"].root + "/etc/cluster.toml", Node: "n2", As: as, Echo: echo, Fence: fence, Every: 250 * time.Millisecond}
		if keyed {
			in.NodeKey = c["n2"].root + "/etc/node.key"
		}
		return startDiskAttacker(t, chaos.DiskAttack{Insider: in})
	}
	crashed := func() string { b, _ := os.ReadFile(filepath.Join(work, "crashed")); return string(b) }

	// 1. a fence of n3 in n1's name
	stop := insider("n1", []string{"n3"}, []string{"n3"})
	if !keyed {
		waitFor(t, 10*time.Second, "n3 obeys the fence forged in n1's name (no keys)", func() bool { return strings.Contains(crashed(), "n3") })
		stop()
	} else {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if strings.Contains(crashed(), "n3") {
				t.Fatal("n3 ran its crash command on a fence forged in n1's name by n2's files")
			}
		}
		stop()
		st := c["n3"].status()
		if st.Disk == nil || st.Disk.NotOwnKey == 0 {
			t.Fatalf("n3 counted no block refused for its key: %+v", st.Disk)
		}
		if log := nodeLog(t, c["n3"]); !strings.Contains(log, "not authenticated with its writer's node key") {
			t.Fatal("n3's log does not say why it refused n1's slot")
		}
		if r := c["n3"].must("nodemgr", "daemon", "status"); !strings.Contains(r, "NOT AUTHENTICATED WITH THEIR WRITER'S NODE KEY") {
			t.Fatalf("nodemgr daemon status on n3 does not show the refusals:\n%s", r)
		}
		sameWeb("the forged fence")
	}

	// 2. n1's host dies; its slot is kept advancing by the insider
	pid, _ := strconv.Atoi(strings.TrimSpace(readFile(t, c["n1"].root+"/var/services/web/main.pid")))
	if err := syscall.Kill(testbed.DaemonPID(c["n1"].root), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	insider("n1", []string{"n2", "n3"}, nil)
	up := func() bool {
		st := c["n2"].status().Services["web"]
		return st.Instances["n2"].Avail == dataset.StatusUp || st.Instances["n3"].Avail == dataset.StatusUp
	}
	if keyed {
		waitFor(t, 45*time.Second, "web taken over by n2 or n3, n1's forged slot refused", up)
		if log := nodeLog(t, c["n2"]) + nodeLog(t, c["n3"]); !strings.Contains(log, "fenced n1") {
			t.Fatal("no survivor says it fenced n1")
		}
		return
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if up() {
			t.Fatal("without keys, web was taken over although the insider kept n1's slot advancing: the attack shows nothing")
		}
	}
	if st := c["n2"].status(); st.Disk == nil || !st.Disk.Slots["n1"].Alive {
		t.Fatalf("without keys, n2 does not read n1's forged slot as alive: %+v", st.Disk)
	}
}
