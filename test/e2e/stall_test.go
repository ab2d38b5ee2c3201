package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A daemon stopped (SIGSTOP) for twice hb.timeout at the fast failover
// profile (hb.timeout 1s), then resumed: its peers rightly declared it
// down, but it declares neither of them down: they beat throughout, their
// beats waited in its socket, and a silence is counted only over the time
// the daemon ran (docs/behaviour.md, "Failure detection"). Its status
// counts the stall. Five stalls, since which of the daemon's ticker and
// receiver runs first after the resume is the scheduler's choice.
func TestStalledDaemonDeclaresNobodyDown(t *testing.T) {
	t.Parallel() // loopback daemons on ports of their own; mostly waits
	names := []string{"n1", "n2", "n3"}
	c := startCluster(t, names, clusterOpts{timeout: "1s", interval: "333ms"})
	settled(t, 30*time.Second, c["n1"], c["n2"], c["n3"])
	pid := daemonPid(t, c["n1"])
	const stalls = 5
	for i := range stalls {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "n2 to see n1 up again", func() bool {
			return c["n2"].status().Nodes["n1"].Status == "up"
		})
		waitFor(t, 10*time.Second, fmt.Sprintf("n1's status to count %d stalls", i+1), func() bool {
			return c["n1"].daemonStatus().HB.Stalls >= uint64(i+1)
		})
	}
	if l := nodeLog(t, c["n1"]); strings.Contains(l, `"event": "peer_down"`) {
		var downs []string
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, `"event": "peer_down"`) {
				downs = append(downs, line)
			}
		}
		t.Fatalf("the stalled n1 declared live peers down (%d times):\n%s", len(downs), strings.Join(downs, "\n"))
	}
	if l := nodeLog(t, c["n2"]); !strings.Contains(l, `"event": "peer_down"`) {
		t.Fatal("n2 never declared the stopped n1 down: the stalls were too short to test anything")
	}
}
