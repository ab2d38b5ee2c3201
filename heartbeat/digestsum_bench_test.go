package heartbeat

import (
	"fmt"
	"math/rand"
	"testing"

	"haven/dataset"
)

// BenchmarkDeltaOneService: the cost of a change of one service among
// 200 or 2000, at format 2, on the sender (publish: diff, digest, encode)
// and on a receiver (the delta merged, then the beat's digest checked).
func BenchmarkDeltaOneService(b *testing.B) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("sender/%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(1))
			nd := randNode(r, n)
			snd := boundsCore(b)
			snd.s.Node = "n2"
			snd.publish(nd)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				nd.Services["svc0001"] = dataset.Instance{Avail: "up", Flags: fmt.Sprint(i)}
				snd.publish(nd)
			}
		})
		b.Run(fmt.Sprintf("receiver/%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(1))
			nd := randNode(r, n)
			snd, rcv := pairCores(b, nd)
			rcv.receive(encode(&message{V: 2, Kind: kindBeat, From: "n2", Inc: 9, Gen: snd.local.Gen, Dig: snd.dig}))
			frames := make([][]byte, 0, 2*b.N)
			for i := 0; i < b.N; i++ {
				prev := localCopy(snd)
				nd.Services["svc0001"] = dataset.Instance{Avail: "up", Flags: fmt.Sprint(i)}
				snd.publish(nd)
				frames = append(frames,
					encode(&message{V: 2, Kind: kindDelta, From: "n2", Inc: 9, Base: prev.Gen, Gen: snd.local.Gen, Delta: diff(prev, snd.local)}),
					encode(&message{V: 2, Kind: kindBeat, From: "n2", Inc: 9, Gen: snd.local.Gen, Dig: snd.dig}))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for _, f := range frames {
				rcv.receive(f)
			}
			b.StopTimer()
			if st := rcv.stats(); st.DigestMismatches != 0 {
				b.Fatalf("%d digest mismatches", st.DigestMismatches)
			}
		})
	}
}
