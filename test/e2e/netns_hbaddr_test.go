package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// A node whose hb.addr is a secondary address of its interface: its
// streams must leave from hb.addr (the address the peers know it by), not
// from the address the kernel picks (eth0's primary), or the peers refuse
// them as coming from no member's address and a config too large for a
// datagram reaches them only by a later push/pull of a join, if any
// (create then answers "did not confirm").
func TestNetnsStreamsLeaveFromSecondaryHBAddr(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	names := []string{"n1", "n2"}
	const secondary = "192.0.2.101" // same /24 as eth0's 192.0.2.1: a secondary address
	b := newNetBedAt(t, names, "", map[string]string{"n1": secondary})
	if out, err := b.bed.Command("n1", "ip", "addr", "add", secondary+"/24", "dev", bedDev).CombinedOutput(); err != nil {
		t.Fatalf("add %s to n1: %v: %s", secondary, err, out)
	}
	if out, _ := b.bed.Command("n1", "ip", "route", "get", b.bed.Addr["n2"]).CombinedOutput(); !strings.Contains(string(out), "src "+b.bed.Addr["n1"]) {
		t.Fatalf("n1 would not pick its primary address towards n2 by itself: %s", out)
	}
	c := b.nodes
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
	// a config well above a datagram: it travels on a stream
	big := strings.Replace(strings.Replace(testbed.PidService, "[DEFAULT]", "# "+strings.Repeat("padding ", 400)+"\n[DEFAULT]", 1),
		`orchestrate = "no"`, "orchestrate = \"no\"\nnodes = [\"n1\", \"n2\"]", 1)
	if len(big) < 3000 {
		t.Fatalf("config of %d bytes: not above a datagram", len(big))
	}
	createService(t, c["n1"], "big", big) // fails when n2 did not confirm
	waitFor(t, 5*time.Second, "big installed on n2", func() bool {
		_, ok := c["n2"].status().Services["big"]
		return ok
	})
	if log := readFile(t, filepath.Join(c["n2"].root, "log", "node.log")); strings.Contains(log, "no member's") {
		t.Fatalf("n2 refused a stream of n1 (its source is not n1's hb.addr %s):\n%s", secondary, grepLines(log, "no member's"))
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
