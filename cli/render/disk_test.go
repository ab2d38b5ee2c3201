package render

import (
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
)

// The disk heartbeat shows in svcmon's Heartbeat section and in the daemon
// status: this node's access, each peer's slot.
func TestDiskShown(t *testing.T) {
	dk := &dataset.HBDisk{Path: "/dev/sdb", Fence: true, Open: true, Reachable: true, Slots: map[string]dataset.HBDiskSlot{
		"n2": {Alive: true, LastAdvanceMs: 400}, "n3": {LastAdvanceMs: 12000}}}
	st := &dataset.ClusterStatus{Local: "n1", Nodes: map[string]dataset.NodeInfo{"n1": {Status: "up"}, "n2": {Status: "up"}, "n3": {Status: "down"}},
		Heartbeat: map[string]dataset.HBPeer{"n2": {Up: true, LastHeardMs: 300}, "n3": {LastHeardMs: 9000}}, Disk: dk}
	out := Svcmon(st, SvcmonOptions{})
	for _, want := range []string{"disk (fence)", "ok", "slot 0.4s", "still 12.0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("svcmon lacks %q:\n%s", want, out)
		}
	}
	dk.Reachable = false
	if out := Svcmon(st, SvcmonOptions{}); !strings.Contains(out, "LOST") {
		t.Errorf("a lost disk is not shown LOST:\n%s", out)
	}
	ns := NodeStatus(&api.DaemonStatus{Node: "n1", Started: time.Now(), Disk: dk}, time.Now())
	for _, want := range []string{"/dev/sdb: LOST", "the fencing device", "slot n2", "advanced 0.4s ago", "still: no longer alive"} {
		if !strings.Contains(ns, want) {
			t.Errorf("daemon status lacks %q:\n%s", want, ns)
		}
	}
}
