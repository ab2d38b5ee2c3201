package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// DiskFence runs only in a disk-fence round, MixedVersions never in one;
// such a round runs with quorum on, refuses -quorum off, gives every node
// the same fencing [hb.disk], and its audit accepts the crash of a node
// fenced through the disk only.
func TestDiskModes(t *testing.T) {
	if checkDisk(false, "DiskFence") == "" || checkDisk(true, "MixedVersions") == "" {
		t.Error("DiskFence accepted without a disk, or MixedVersions with one")
	}
	if why := checkDisk(true, "DiskFence") + checkDisk(true, "SplitBrain") + checkDisk(false, "MixedVersions"); why != "" {
		t.Errorf("refused: %s", why)
	}
	pool := []string{"DiskFence", "MixedVersions", "SplitBrain"}
	if got := diskPool(false, pool); !slices.Equal(got, []string{"MixedVersions", "SplitBrain"}) {
		t.Errorf("pool without a disk %v", got)
	}
	if got := diskPool(true, pool); !slices.Equal(got, []string{"DiskFence", "SplitBrain"}) {
		t.Errorf("disk pool %v", got)
	}
	cfg := Config{Disk: true, Quorum: QuorumMixed}
	if err := diskMode(&cfg); err != nil || cfg.Quorum != QuorumOn {
		t.Errorf("disk round: %v, quorum %q, want on", err, cfg.Quorum)
	}
	if err := diskMode(&Config{Disk: true, Quorum: QuorumOff}); err == nil {
		t.Error("a disk round with quorum off accepted")
	}
	w := t.TempDir()
	c := &Cluster{cfg: Config{Disk: true}, Work: w, Names: []string{"n1", "n2"}, Nodes: map[string]*Node{}}
	if s := c.diskToml(); !strings.Contains(s, "[hb.disk]\npath = \""+filepath.Join(w, "hb.disk")+"\"\nfence = true\n") {
		t.Errorf("[hb.disk] of a disk round:\n%s", s)
	}
	for _, n := range c.Names {
		c.Nodes[n] = &Node{Name: n, Root: filepath.Join(w, n), c: c}
		os.MkdirAll(filepath.Join(w, n, "log"), 0o755)
	}
	os.WriteFile(filepath.Join(w, "n1", "log", "node.log"), []byte(`x WARN daemon node action crash: fenced through the disk by n2 {"event": "node_action_run"}`+"\n"), 0o644)
	got := c.fencedCrashes([]string{"1.0 n1 crash", "2.0 n1 crash", "3.0 n2 crash", "4.0 n1 reboot"})
	if want := []string{"2.0 n1 crash", "3.0 n2 crash", "4.0 n1 reboot"}; !slices.Equal(got, want) {
		t.Errorf("node actions left for the audit %q, want %q (one crash of n1 is its fence's)", got, want)
	}
	if got := c.fencedCrashes([]string{"5.0 n1 crash"}); len(got) != 1 {
		t.Errorf("a fence's log line counted twice: %q", got)
	}
	c.cfg.Disk = false
	if c.diskToml() != "" || len(c.fencedCrashes([]string{"1.0 n1 crash"})) != 1 {
		t.Error("a round without a disk has an [hb.disk] or accepts a crash")
	}
}
