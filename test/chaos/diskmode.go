package chaos

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"haven/dataset"
)

// The disk-fence rounds (Config.Disk, `chaos -disk`, `make chaos DISK=1`):
// every node's node.toml gets the same [hb.disk], a file of the work
// directory shared by the namespaces with fence = true and a timeout of
// diskTimeout, so that the survivors fence a lost node through the disk
// (docs/operations.md, "SBD-style fencing") before they take its services
// over: in the 3-node bed (n1 to n3 and the arbitrator a1), or with
// -nodes 2 in the layout of "A 2-node cluster with the disk instead of
// IPMI" (a plain arbitrator both nodes reach, split_action stop). The
// fence needs cluster.quorum on: the round runs every test with it on.
// Such a round also draws DiskFence (diskfence.go): a host without the
// secret writes the disk while links are cut.
//
// A fenced node runs its crash_command (the bed's harmless one, which
// records that it ran): in these rounds the audit accepts a crash of a
// node whose log says, since the previous audit, that it was fenced
// through the disk, and fails any other.

// diskTimeout is hb.disk.timeout of a disk-fence round: the fence wait is
// twice it plus the self-stop deadline.
const diskTimeout = "2s"

// diskFenceExtra is what a fencing disk adds to the takeover of a lost
// node by its self-stop deadline (0 in the other rounds): the fence wait
// is 2 x hb.disk.timeout more; with two nodes, where the lost one may have
// kept the vote too (the arbitrator answers both), the survivor running
// fewer services starts its fence only at the lost node's self-stop
// deadline (the fence race, docs/operations.md): one more deadline.
func (c *Cluster) diskFenceExtra() time.Duration {
	if !c.cfg.Disk {
		return 0
	}
	d, _ := time.ParseDuration(diskTimeout)
	if len(c.Names) == 2 {
		return 2*d + selfStop
	}
	return 2 * d
}

// diskOnly are the tests of the disk-fence rounds only; diskNot, with why,
// those that cannot run in one.
var (
	diskOnly = []string{"DiskFence"}
	diskNot  = map[string]string{
		"MixedVersions": "the previous release has no disk heartbeat",
	}
)

// DiskPath is the fencing disk of a disk-fence round.
func (c *Cluster) DiskPath() string { return filepath.Join(c.Work, "hb.disk") }

// diskToml is the [hb.disk] section of a disk-fence round's node.toml
// ("" otherwise).
func (c *Cluster) diskToml() string {
	if !c.cfg.Disk {
		return ""
	}
	return fmt.Sprintf("\n[hb.disk]\npath = %q\nfence = true\ntimeout = %q\n", c.DiskPath(), diskTimeout)
}

// checkDisk refuses a test named for a round whose disk mode it cannot run
// in ("" when it can).
func checkDisk(disk bool, name string) string {
	switch {
	case !disk && slices.Contains(diskOnly, name):
		return name + " needs a fencing disk (-disk, make chaos DISK=1)"
	case disk && diskNot[name] != "":
		return name + " does not run with a fencing disk: " + diskNot[name]
	}
	return ""
}

// diskPool removes from pool the tests the round's disk mode cannot run.
func diskPool(disk bool, pool []string) []string {
	return slices.DeleteFunc(slices.Clone(pool), func(n string) bool { return checkDisk(disk, n) != "" })
}

// diskMode checks and completes a disk-fence round's config: quorum on.
func diskMode(cfg *Config) error {
	if !cfg.Disk {
		return nil
	}
	if cfg.Quorum == QuorumOff {
		return ConfigError("-disk fences through the disk, which needs cluster.quorum on: not with -quorum off")
	}
	if cfg.Previous != "" {
		return ConfigError("-disk: " + diskNot["MixedVersions"] + " (not with -previous)")
	}
	cfg.Quorum = QuorumOn
	return nil
}

// fencedCrashes splits node actions (lines `<uptime> NODE crash|reboot`)
// into those of a disk-fence round's fences and the others: a crash of a
// node whose log says, since fenceSeen, that it was fenced through the
// disk, once per such line.
func (c *Cluster) fencedCrashes(actions []string) (others []string) {
	if !c.cfg.Disk {
		return actions
	}
	lines, sizes := c.logLinesSince(c.fenceSeen, func(l string) bool { return strings.Contains(l, "node action crash: fenced through the disk by ") })
	c.fenceSeen = sizes
	fenced := map[string]int{}
	for _, l := range lines {
		n, _, _ := strings.Cut(l, ":")
		fenced[n]++
	}
	for _, a := range actions {
		if f := strings.Fields(a); len(f) == 3 && f[2] == "crash" && fenced[f[1]] > 0 {
			fenced[f[1]]--
			continue
		}
		others = append(others, a)
	}
	return others
}

// settleFences waits, in a disk-fence round, before an admin's thaw of n:
// until every other node sees n up (their takeover gates of n closed, so
// they abandon their fences of n within a pulse), then two beat periods
// more (a fence still announced meanwhile is read and obeyed by then).
// A thaw sooner is undone by a fence of n read just after it: n obeys it
// (docs/operations.md, "SBD-style fencing"), which the audit would take
// for a freeze nobody asked for.
func (t *T) settleFences(n string) {
	if !t.C.cfg.Disk {
		return
	}
	err := waitUntil(splitBound, func() bool {
		for _, o := range t.C.others(n) {
			if !t.C.sees(o, n, dataset.NodeUp) {
				return false
			}
		}
		return true
	}, "")
	if err != nil {
		t.Note("%s not seen up by every other node within %s before its thaw", n, splitBound)
	}
	time.Sleep(2 * hbInterval)
}

// afterFence is afterDeadline in a disk-fence round: the survivor to may
// take svc over from lost before lost's self-stop deadline once it fenced
// lost through the disk (an acknowledgement: lost stopped its services),
// which its log says since the test began.
func (t *T) afterFence(svc, lost, to string) bool {
	if !t.C.cfg.Disk {
		return false
	}
	for _, l := range t.C.newLogLines(t.logs, "fenced "+lost+": fenced through the disk") {
		if strings.HasPrefix(l, to+": ") {
			t.Note("%s took %s over once it fenced %s through the disk", to, svc, lost)
			return true
		}
	}
	return false
}
