package quorum

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var leaseCfg = LeaseConfig{Lease: 10 * time.Second, Fresh: 2 * time.Second}

// started is a book past its start-up wait.
func started(t0 time.Time) (*LeaseBook, time.Time) {
	b := NewLeaseBook(leaseCfg, t0)
	return b, t0.Add(leaseCfg.Lease + LeaseMargin)
}

func rep(n string, running int, part ...string) Report {
	return Report{Node: n, Partition: part, Running: running}
}

func TestLeaseBookGivesNothingAfterARestartUntilOldLeasesEnded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := NewLeaseBook(leaseCfg, t0)
	for _, d := range []time.Duration{0, time.Second, leaseCfg.Lease} {
		if a := b.Report(t0.Add(d), rep("n1", 1, "n1", "n2")); a.Granted {
			t.Fatalf("granted %s after the start: %+v", d, a)
		}
	}
	if a := b.Report(t0.Add(leaseCfg.Lease+LeaseMargin), rep("n1", 1, "n1", "n2")); !a.Granted || !a.Exclusive {
		t.Fatalf("not granted after lease + margin: %+v", a)
	}
}

func TestLeaseBookWholeClusterIsGrantedExclusive(t *testing.T) {
	b, now := started(time.Unix(1000, 0))
	for i := 0; i < 5; i++ {
		for _, n := range []string{"n1", "n2"} {
			if a := b.Report(now, rep(n, 0, "n2", "n1")); !a.Granted || !a.Exclusive || !slices.Equal(a.Winner, []string{"n1", "n2"}) {
				t.Fatalf("%s in the whole cluster: %+v", n, a)
			}
		}
		now = now.Add(time.Second)
	}
}

// The owner n1 is cut off from n2 and from the arbitrator: n2 gets the
// vote once n1's last report is stale, exclusive once n1's lease ended.
func TestLeaseBookOwnerCutOff(t *testing.T) {
	b, now := started(time.Unix(1000, 0))
	b.Report(now, rep("n1", 1, "n1", "n2"))
	b.Report(now, rep("n2", 0, "n1", "n2"))
	n1Sent := now
	now = now.Add(time.Second)
	a := b.Report(now, rep("n2", 0, "n2"))
	if a.Granted {
		t.Fatalf("n2 granted while n1's report of the whole cluster is fresh: %+v", a)
	}
	for now = now.Add(time.Second); ; now = now.Add(time.Second) {
		a = b.Report(now, rep("n2", 0, "n2"))
		if a.Granted {
			break
		}
		if now.Sub(n1Sent) > leaseCfg.Fresh+time.Second {
			t.Fatalf("n2 not granted %s after n1 fell silent: %+v", now.Sub(n1Sent), a)
		}
	}
	if a.Exclusive {
		t.Fatalf("exclusive while n1's lease runs: %+v", a)
	}
	for ; ; now = now.Add(time.Second) {
		a = b.Report(now, rep("n2", 0, "n2"))
		if !a.Granted {
			t.Fatalf("n2 lost the vote: %+v", a)
		}
		if a.Exclusive {
			break
		}
	}
	if end := NodeLeaseEnd(n1Sent, leaseCfg.Lease); !end.Before(now) {
		t.Fatalf("exclusive at %s, but n1 counts its vote until %s", now, end)
	}
}

// Only the link between the nodes is cut: both report their own side;
// the one running the service keeps the vote, the other loses it.
func TestLeaseBookLinkCutKeepsTheActiveSide(t *testing.T) {
	for _, first := range []string{"n1", "n2"} {
		b, now := started(time.Unix(1000, 0))
		b.Report(now, rep("n1", 0, "n1", "n2"))
		b.Report(now, rep("n2", 1, "n1", "n2"))
		now = now.Add(time.Second)
		order := []Report{rep("n1", 0, "n1"), rep("n2", 1, "n2")}
		if first == "n2" {
			order[0], order[1] = order[1], order[0]
		}
		for i := 0; i < 15; i++ {
			for _, r := range order {
				a := b.Report(now, r)
				if r.Node == "n1" && a.Granted {
					t.Fatalf("%s first: n1 (running nothing) granted after the cut: %+v", first, a)
				}
				if r.Node == "n2" && i > 0 && !a.Granted {
					t.Fatalf("%s first: n2 (running the service) refused at report %d: %+v", first, i, a)
				}
			}
			now = now.Add(time.Second)
		}
		if a := b.Report(now, rep("n2", 1, "n2")); !a.Exclusive {
			t.Fatalf("n2 not exclusive after n1's lease: %+v", a)
		}
	}
}

func TestLeaseBookTieBreaks(t *testing.T) {
	b, now := started(time.Unix(1000, 0))
	// 4 nodes split 2/2, the same services on each side: the lowest name.
	// The reports made during the start-up wait count for the first
	// election (so it is not the first to ask after the wait that wins).
	b.Report(now.Add(-time.Second), rep("n3", 1, "n3", "n4"))
	b.Report(now.Add(-time.Second), rep("n1", 1, "n1", "n2"))
	if a := b.Report(now, rep("n3", 1, "n3", "n4")); a.Granted {
		t.Fatalf("n3,n4 granted on a tie with n1,n2: %+v", a)
	}
	if a := b.Report(now, rep("n2", 0, "n1", "n2")); !a.Granted {
		t.Fatalf("n1,n2 refused: %+v", a)
	}
	// a larger partition wins whatever it runs
	b2, now := started(time.Unix(1000, 0))
	b2.Report(now.Add(-time.Second), rep("n1", 5, "n1"))
	b2.Report(now.Add(-time.Second), rep("n2", 0, "n2", "n3"))
	if a := b2.Report(now, rep("n1", 5, "n1")); a.Granted {
		t.Fatalf("the smaller partition granted: %+v", a)
	}
	if a := b2.Report(now, rep("n3", 0, "n3", "n2")); !a.Granted {
		t.Fatalf("the larger partition refused: %+v", a)
	}
}

// n2 comes back: the winner grows once a member of it hears n2, and n2
// is granted when it reports the same partition.
func TestLeaseBookWinnerGrows(t *testing.T) {
	b, now := started(time.Unix(1000, 0))
	b.Report(now, rep("n1", 1, "n1"))
	if a := b.Report(now, rep("n2", 0, "n1", "n2")); a.Granted {
		t.Fatalf("n2 granted before a member of the winner hears it: %+v", a)
	}
	if a := b.Report(now.Add(time.Second), rep("n1", 1, "n1", "n2")); !a.Granted || !slices.Equal(a.Winner, []string{"n1", "n2"}) {
		t.Fatalf("n1 hearing n2: %+v", a)
	}
	if a := b.Report(now.Add(time.Second), rep("n2", 0, "n1", "n2")); !a.Granted {
		t.Fatalf("n2 in the grown winner: %+v", a)
	}
}

// The safety rule, over random schedules: when a node gets an exclusive
// grant, every node outside its partition has stopped counting its own
// lease (NodeLeaseEnd from its report's send time, up to LeaseMargin/2
// before the arbitrator's receipt).
func TestLeaseBookExclusiveMeansOthersCountedTheirVoteLost(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 21))
		t0 := time.Unix(1000, 0)
		b, now := started(t0)
		if r.IntN(4) == 0 { // sometimes the arbitrator restarts meanwhile
			b = NewLeaseBook(leaseCfg, now.Add(-time.Second))
		}
		nodeEnd := map[string]time.Time{}
		part := map[string][]string{}
		for step := 0; step < 200; step++ {
			now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			n := nodes[r.IntN(len(nodes))]
			if r.IntN(10) == 0 || part[n] == nil { // the node's view changes
				p := []string{n}
				for _, o := range nodes {
					if o != n && r.IntN(2) == 0 {
						p = append(p, o)
					}
				}
				part[n] = p
			}
			sent := now.Add(-time.Duration(r.IntN(int(LeaseMargin/2/time.Millisecond))) * time.Millisecond)
			a := b.Report(now, rep(n, r.IntN(3), part[n]...))
			if !a.Granted {
				continue
			}
			nodeEnd[n] = NodeLeaseEnd(sent, a.Lease)
			if !a.Exclusive {
				continue
			}
			for _, o := range nodes {
				if !slices.Contains(part[n], o) && nodeEnd[o].After(now) {
					t.Fatalf("seed %d step %d: %s granted exclusive (partition %v) at %s while %s counts its vote until %s", seed, step, n, part[n], now.Sub(t0), o, nodeEnd[o].Sub(t0))
				}
			}
		}
	}
}
