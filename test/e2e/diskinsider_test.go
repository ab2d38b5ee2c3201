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
//  3. On a bed of its own: web runs on n3, whose split_action is
//     "disabled" (a stall of its slot proves nothing: only its
//     acknowledgement ends a fence of it); n3's daemon is paused (its
//     services run on); n1 and n2 fence it. The insider writes beats as
//     n3 acknowledging every fence announced against it: keyed, no fence
//     ends (its stall proves nothing, the survivors say) and web is not
//     started elsewhere for 10 s more; unkeyed, the fence
//     ends on the forged acknowledgement and web starts on n1 or n2 while
//     n3's copy still runs (a split brain).
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
		t.Run("ack "+name, func(t *testing.T) {
			t.Parallel()
			diskInsiderAck(t, keyed)
		})
	}
}

// insiderBed is 3 daemons on loopback, quorum on, the disk fencing (a
// file of the work directory, hb.disk.timeout 2s), each node's
// split_action split(name) and a crash command that appends its name to
// WORK/crashed; with keyed, per-node keys (require).
func insiderBed(t *testing.T, keyed bool, split func(name string) string) (c map[string]*node, work, diskFile string) {
	names := []string{"n1", "n2", "n3"}
	work = t.TempDir()
	diskFile = filepath.Join(work, "hb.disk")
	c = newCluster(t, names, clusterOpts{extra: `split_action = "SPLIT"` + "\n" + `crash_command = "echo NODE >> ` + work + `/crashed"`})
	conf := strings.Replace(readFile(t, c["n1"].root+"/etc/cluster.toml"), "[cluster]\n", "[cluster]\nquorum = true\n", 1)
	for _, n := range names {
		p := c[n].root + "/etc/node.toml"
		nt := strings.NewReplacer("NODE", n, "SPLIT", split(n)).Replace(readFile(t, p)) + "\n[hb.disk]\npath = \"" + diskFile + "\"\nfence = true\ntimeout = \"2s\"\n"
		if err := os.WriteFile(p, []byte(nt), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if keyed {
		conf += "\n[node_keys]\n"
		for _, n := range names {
			conf += c[n].must("nodemgr", "key", "generate")
		}
	}
	for _, n := range names {
		writeClusterToml(t, c[n], conf)
	}
	startNodes(t, c, names)
	return c, work, diskFile
}

// insiderAs starts the holder of n2's files writing the disk as member as
// (chaos.DiskInsider), with n2's node key when keyed.
func insiderAs(t *testing.T, c map[string]*node, diskFile string, keyed bool, as string, echo, fence, ack []string) (stop func()) {
	in := &chaos.DiskInsider{Path: diskFile, ClusterToml: c["n2"].root + "/etc/cluster.toml", Node: "n2", As: as, Echo: echo, Fence: fence, AckFences: ack, Every: 250 * time.Millisecond}
	if keyed {
		in.NodeKey = c["n2"].root + "/etc/node.key"
	}
	return startDiskAttacker(t, chaos.DiskAttack{Insider: in})
}

func diskInsider(t *testing.T, keyed bool) {
	names := []string{"n1", "n2", "n3"}
	c, work, diskFile := insiderBed(t, keyed, func(string) string { return "stop" })
	sameWeb := webOnN1(t, c, names)
	waitFor(t, 20*time.Second, "n3 reads n1's slot advancing", func() bool {
		st := c["n3"].status()
		return st.Disk != nil && st.Disk.Slots["n1"].Alive
	})
	insider := func(as string, echo, fence []string) func() {
		return insiderAs(t, c, diskFile, keyed, as, echo, fence, nil)
	}
	crashed := func() string { b, _ := os.ReadFile(filepath.Join(work, "crashed")); return string(b) }

	// 1. a fence of n3 in n1's name
	stop := insider("n1", []string{"n3"}, []string{"n3"})
	if !keyed {
		waitFor(t, 10*time.Second, "n3 obeys the fence forged in n1's name (no keys)", func() bool { return strings.Contains(crashed(), "n3") })
		stop()
	} else {
		// until n3 refused 8 of the forged blocks (the attacker writes one
		// every 250 ms), n3 never runs its crash command
		waitFor(t, 20*time.Second, "n3 refuses 8 blocks of n1's slot forged by n2's files, never obeying one", func() bool {
			if strings.Contains(crashed(), "n3") {
				t.Fatal("n3 ran its crash command on a fence forged in n1's name by n2's files")
			}
			st := c["n3"].status()
			return st.Disk != nil && st.Disk.NotOwnKey >= 8
		})
		stop()
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
	holdsFor(t, 20*time.Second, "without keys, web was taken over although the insider kept n1's slot advancing: the attack shows nothing", up)
	if st := c["n2"].status(); st.Disk == nil || !st.Disk.Slots["n1"].Alive {
		t.Fatalf("without keys, n2 does not read n1's forged slot as alive: %+v", st.Disk)
	}
}

func diskInsiderAck(t *testing.T, keyed bool) {
	c, _, diskFile := insiderBed(t, keyed, func(n string) string {
		if n == "n3" {
			return "disabled"
		}
		return "stop"
	})
	createService(t, c["n1"], "web", testbed.HAService(`["n3", "n1", "n2"]`, ""))
	waitFor(t, 30*time.Second, "web up on n3", upOnlyOn(c["n1"], "web", "n3"))
	pid := testbed.DaemonPID(c["n3"].root)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	insiderAs(t, c, diskFile, keyed, "n3", []string{"n1", "n2"}, nil, []string{"n1", "n2"})
	elsewhere := func() bool {
		for _, n := range []string{"n1", "n2"} {
			if c[n].instance("web").Avail == dataset.StatusUp {
				return true
			}
		}
		return false
	}
	if !keyed {
		waitFor(t, 45*time.Second, "without keys, web started on n1 or n2 on the forged acknowledgement", elsewhere)
		if log := nodeLog(t, c["n1"]) + nodeLog(t, c["n2"]); !strings.Contains(log, "acknowledged by n3") {
			t.Fatal("without keys, no fencer says n3 acknowledged")
		}
		return
	}
	waitFor(t, 30*time.Second, "a survivor finds n3's stalled slot proves nothing", func() bool {
		return strings.Contains(nodeLog(t, c["n1"])+nodeLog(t, c["n2"]), "the stall proves nothing")
	})
	holdsFor(t, 10*time.Second, "web started on n1 or n2 while n3 (paused) still runs it: a forged acknowledgement was taken", elsewhere)
	if log := nodeLog(t, c["n1"]) + nodeLog(t, c["n2"]); strings.Contains(log, "acknowledged by n3") {
		t.Fatal("a fencer took an acknowledgement of n3 forged by n2's files")
	}
	if st := c["n1"].status(); st.Disk == nil || st.Disk.NotOwnKey == 0 {
		t.Fatalf("n1 counted no block refused: %+v", st.Disk)
	}
}
