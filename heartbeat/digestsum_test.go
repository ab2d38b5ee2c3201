package heartbeat

import (
	"fmt"
	"math/rand"
	"testing"

	"haven/dataset"
)

// randNode returns a node of n services (some with resources, faults and
// the since:"2" fields set), targets, configs and clears.
func randNode(r *rand.Rand, n int) dataset.Node {
	nd := dataset.Node{Name: "n2", Monitor: "idle", Labels: map[string]string{"az": "a"},
		Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{},
		Configs: map[string]dataset.ConfigEntry{}, Clears: map[string]dataset.ClearRequest{},
		Format: dataset.Format{Max: 2, Level: 2}}
	for i := 0; i < n; i++ {
		nd.Services[fmt.Sprintf("svc%04d", i)] = randInst(r)
	}
	for i := 0; i < n/4; i++ {
		k := fmt.Sprintf("svc%04d", i)
		nd.Targets[k] = dataset.Target{Expect: "started", ID: fmt.Sprint(r.Int())}
		nd.Configs[k] = dataset.ConfigEntry{Version: dataset.Version{Counter: uint64(r.Intn(9)), Origin: "n2"}, Digest: fmt.Sprint(r.Int())}
	}
	return nd
}

// localCopy is a deep copy of c's local dataset: a later publish changes
// the sender's own in place.
func localCopy(c *core) *dataset.Node {
	n := c.local.Clone()
	return &n
}

func randInst(r *rand.Rand) dataset.Instance {
	inst := dataset.Instance{Avail: dataset.Status(fmt.Sprint("up", r.Intn(3))), Flags: fmt.Sprint(r.Intn(100)),
		LastStartMs: r.Int63n(1000)}
	if r.Intn(2) == 0 {
		inst.Resources = map[string]dataset.Resource{"ip#1": {Status: "up", Label: "1.2.3.4", Fault: fmt.Sprint(r.Intn(3))}}
	}
	return inst
}

// mutate makes one random change of nd: a service changed, added or
// removed, a target or config set or removed, or a node-level field.
func mutate(r *rand.Rand, nd *dataset.Node) {
	k := fmt.Sprintf("svc%04d", r.Intn(len(nd.Services)+2))
	switch r.Intn(7) {
	case 0, 1:
		nd.Services[k] = randInst(r)
	case 2:
		delete(nd.Services, k)
	case 3:
		nd.Targets[k] = dataset.Target{Expect: "stopped", ID: fmt.Sprint(r.Int())}
	case 4:
		delete(nd.Configs, k)
		delete(nd.Targets, k)
	case 5:
		nd.Load15 = float64(r.Intn(400)) / 100
		nd.MemAvailPct = float64(r.Intn(100))
	case 6:
		nd.Clears[k] = dataset.ClearRequest{Node: "n2", Version: dataset.Version{Counter: uint64(r.Intn(9))}}
	}
}

// TestSumsIncremental: after random sequences of changes (fixed seeds),
// the digest the sender keeps by deltas and the one a receiver keeps by
// applying the same deltas (sent as frames) both equal the digest
// computed from scratch, at format 2; at format 1 the sender's is the
// whole-copy digest.
func TestSumsIncremental(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewSource(seed))
		nd := randNode(r, 20+r.Intn(30))
		snd, rcv := pairCores(t, nd)
		p := rcv.peers["n2"]
		if got := rcv.copyDigest(p, 2); got != snd.dig {
			t.Fatalf("seed %d: copy's digest %x after a full copy, sender's %x", seed, got, snd.dig)
		}
		for step := 0; step < 200; step++ {
			prev := localCopy(snd)
			mutate(r, &nd)
			snd.publish(nd)
			if snd.local.Gen == prev.Gen {
				continue
			}
			var scratch sums
			scratch.full(snd.local, 2)
			if snd.dig != scratch.value() {
				t.Fatalf("seed %d step %d: sender's kept digest %x, from scratch %x", seed, step, snd.dig, scratch.value())
			}
			d := diff(prev, snd.local)
			rcv.receive(encode(&message{V: 2, Kind: kindDelta, From: "n2", Inc: 9, Base: prev.Gen, Gen: snd.local.Gen, Delta: d}))
			if p.gen != snd.local.Gen || !p.sums.ok {
				t.Fatalf("seed %d step %d: copy at gen %d (kept %v), want %d", seed, step, p.gen, p.sums.ok, snd.local.Gen)
			}
			scratch.full(p.data, 2)
			if p.sums.value() != scratch.value() || p.sums.value() != snd.dig {
				t.Fatalf("seed %d step %d: receiver's kept digest %x, from scratch %x, sender's %x",
					seed, step, p.sums.value(), scratch.value(), snd.dig)
			}
		}
		if st := rcv.stats(); st.DigestMismatches != 0 || st.NeedsSent != 0 {
			t.Fatalf("seed %d: %d mismatches, %d needs", seed, st.DigestMismatches, st.NeedsSent)
		}
		// at format 1 the sender says the whole-copy digest
		nd.Format = dataset.Format{Max: 2, Level: 1}
		mutate(r, &nd)
		nd.Load15 += 1
		snd.publish(nd)
		if want := digest(snd.local.AtLevel(1)); snd.dig != want {
			t.Fatalf("seed %d: v1 digest %x, want the whole-copy %x", seed, snd.dig, want)
		}
	}
}

// TestSumsLevel: the fields tagged since:"2" are left out of the entries'
// hashes below format 2, as dataset.AtLevel leaves them out.
func TestSumsLevel(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	nd := randNode(r, 10)
	var a, b sums
	a.full(&nd, 1)
	b.full(nd.AtLevel(1), 1)
	if a.value() != b.value() {
		t.Fatalf("level 1: %x, the level-1 view's %x", a.value(), b.value())
	}
	b.full(nd.AtLevel(1), 2)
	a.full(&nd, 2)
	if a.value() == b.value() {
		t.Fatal("level 2: the since:\"2\" fields are not hashed")
	}
}

// TestCorruptedCopyAsksFull: a copy whose delta went wrong (one service
// differs from the sender's) is detected by the next beat's digest, at
// both message versions, and a full copy is asked.
func TestCorruptedCopyAsksFull(t *testing.T) {
	for _, v := range []int{1, 2} {
		r := rand.New(rand.NewSource(3))
		nd := randNode(r, 30)
		nd.Format, nd.Gen = dataset.Format{Max: 2, Level: v}, 1
		snd, rcv := boundsCore(t), boundsCore(t)
		snd.s.Node = "n2"
		snd.publish(nd)
		rcv.receive(encode(&message{V: v, Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: snd.local.AtLevel(v)}))
		rcv.receive(encode(&message{V: v, Kind: kindBeat, From: "n2", Inc: 9, Gen: 1, Dig: snd.dig}))
		prev := localCopy(snd)
		nd.Services["svc0003"] = dataset.Instance{Avail: "down"}
		snd.publish(nd)
		// the delta the receiver gets differs from the sender's change
		bad := diff(prev.AtLevel(v), snd.local.AtLevel(v))
		bad.Set["svc0003"] = dataset.Instance{Avail: "up"}
		rcv.receive(encode(&message{V: v, Kind: kindDelta, From: "n2", Inc: 9, Base: 1, Gen: 2, Delta: bad}))
		if st := rcv.stats(); st.DigestMismatches != 0 || st.NeedsSent != 0 {
			t.Fatalf("v%d: %d mismatches before the beat", v, st.DigestMismatches)
		}
		rcv.receive(encode(&message{V: v, Kind: kindBeat, From: "n2", Inc: 9, Gen: 2, Dig: snd.dig}))
		if r := rejection(rcv); r != "" {
			t.Fatalf("v%d: rejected: %s", v, r)
		}
		if st := rcv.stats(); st.DigestMismatches != 1 || st.NeedsSent != 1 {
			t.Fatalf("v%d: %d mismatches, %d needs after the beat; want 1, 1", v, st.DigestMismatches, st.NeedsSent)
		}
	}
}
