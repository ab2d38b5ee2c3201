package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
)

// The duplicate-address probe of a VIP runs during the ready window (from
// the instance's entry in ready), not after it: a host that answers for
// the address at any time of the window makes the start refuse, even one
// that lets it go before the window ends (the probe after the window, as
// before, would have found the address free).
func TestNetnsVIPHolderDuringWindowRefusesStart(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	names := []string{"n1", "n2"}
	b := newNetBed(t, names, "")
	c := b.nodes
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)

	createService(t, c["n1"], "web", vipService(`["n1", "n2"]`))
	waitFor(t, 10*time.Second, "web ready on n1 (the leader; ready_period 2s)", func() bool {
		return c["n1"].instance("web").Monitor.State == dataset.Ready
	})
	// another host answers for the VIP during n1's window, then lets it go
	// (n2's namespace, as a host outside the service: web runs nowhere)
	ipOK(b, "-n", b.bed.NS["n2"], "addr", "add", vip+"/24", "dev", bedDev)
	if st := c["n1"].instance("web").Monitor.State; st != dataset.Ready {
		t.Fatalf("n1 is %s once the holder is up, want still ready: the window (2s) ended too soon on this machine", st)
	}
	time.Sleep(400 * time.Millisecond) // a few probes of the window (one each 100ms), each answered
	ipOK(b, "-n", b.bed.NS["n2"], "addr", "del", vip+"/24", "dev", bedDev)

	waitFor(t, 15*time.Second, "n1's start of web refused", func() bool {
		return strings.Contains(readSvcLog(t, c["n1"], "web"), "already answers on the network")
	})
	if b.hasAddr("n1", vip) {
		t.Fatalf("n1 added %s although a host answered for it during the ready window", vip)
	}
}

// ipOK runs ip with args, failing the test on an error.
func ipOK(b *netBed, args ...string) {
	b.t.Helper()
	_, err := chaos.IP(args...)
	b.ok(err)
}

// readSvcLog is the service log of svc on n ("" when there is none yet).
func readSvcLog(t *testing.T, n *node, svc string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(n.root, "log", "services", svc+".log"))
	return string(b)
}

// The time from the fast-ack start (the moment the claimant saw the last
// peer's ack, in its node.log) to the VIP on the new node, after the owner's
// link is cut: a measurement, not a pass/fail test (docs/benchmarks.md).
// HAVEN_VIP_BENCH=1 runs it; -count=5 gives five runs.
func TestNetnsVIPFastAckFailoverTiming(t *testing.T) {
	if os.Getenv("HAVEN_VIP_BENCH") == "" {
		t.Skip("a measurement: HAVEN_VIP_BENCH=1 runs it")
	}
	b, up := fastAckVIPFailover(t)
	c := b.nodes
	acked := lastLogTime(t, c["n2"], "start before the ready period ends (fast ack)")
	ready := lastLogTime(t, c["n2"], "idle -> ready")
	if acked.IsZero() || ready.IsZero() {
		t.Fatalf("n2's node.log shows no ready window ended by the acks:\n%s", nodeLog(t, c["n2"]))
	}
	t.Logf("VIP-AFTER-LAST-ACK %d ms (ready %s, last ack seen %s: a window of %d ms; %s on n2 %s)", up.Sub(acked).Milliseconds(),
		ready.Format("15:04:05.000"), acked.Format("15:04:05.000"), acked.Sub(ready).Milliseconds(), vip, up.Format("15:04:05.000"))
}

// With node.ready_fast_ack the ready window lasts a few milliseconds,
// less than the VIP's duplicate-address probe (probe_timeout 300ms): n2,
// which would lead web were n1 down, begins the probe when n1 falls silent
// (a beat and a half), and its start after the acks takes that probe's
// answer instead of probing for probe_timeout after the window.
func TestNetnsVIPFastAckProbeBeginsAtSilence(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	b, _ := fastAckVIPFailover(t)
	if log := readSvcLog(t, b.nodes["n2"], "web"); !strings.Contains(log, "no answer for "+vip+" since its node fell silent") {
		t.Fatalf("n2's start of web did not take the probe begun at n1's silence; its log:\n%s", log)
	}
}

// fastAckVIPFailover runs web with its VIP on n1 of a 3-node bed with
// node.ready_fast_ack, cuts n1's link and returns when the VIP is in n2's
// namespace (n2 leads web without n1), with that time.
func fastAckVIPFailover(t *testing.T) (*netBed, time.Time) {
	t.Helper()
	names := []string{"n1", "n2", "n3"}
	b := newNetBed(t, names, "ready_fast_ack = true")
	c := b.nodes
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
	createService(t, c["n1"], "web", vipService(`["n1", "n2", "n3"]`))
	waitFor(t, 15*time.Second, "web up on n1 only (seen from n2)", upOnlyOn(c["n2"], "web", "n1"))
	waitFor(t, 5*time.Second, vip+" in n1's namespace", func() bool { return b.hasAddr("n1", vip) })

	b.cut("n1")
	var up time.Time
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b.hasAddr("n2", vip) {
			up = time.Now()
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if up.IsZero() {
		t.Fatalf("%s not on n2 20s after n1's link was cut", vip)
	}
	if w := b.holders(vip); !slices.Contains(w, "n2") {
		t.Fatalf("%s held by %v", vip, w)
	}
	return b, up
}

// lastLogTime is the time of the last line of n's node.log about web that
// holds what (zero: none).
func lastLogTime(t *testing.T, n *node, what string) time.Time {
	t.Helper()
	var times []time.Time
	for _, line := range strings.Split(nodeLog(t, n), "\n") {
		if !strings.Contains(line, what) || !strings.Contains(line, "web") {
			continue
		}
		ts, _, _ := strings.Cut(line, "\t")
		if tm, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err == nil {
			times = append(times, tm)
		}
	}
	if len(times) == 0 {
		return time.Time{}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[len(times)-1]
}
