package heartbeat

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// TestPublishKeepsWhatWasPublished: after random changes (fixed seeds),
// the local dataset the sender keeps is what was published (a deep copy
// of it, named and numbered), and the caller modifying what it published
// afterwards (an instance's resources in place, its labels) changes
// nothing of it.
func TestPublishKeepsWhatWasPublished(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewSource(seed))
		nd := randNode(r, 20+r.Intn(20))
		snd := boundsCore(t)
		snd.s.Node = "n2"
		snd.publish(nd)
		for step := 0; step < 200; step++ {
			mutate(r, &nd)
			switch r.Intn(6) {
			case 0:
				nd.Labels = map[string]string{"az": fmt.Sprint(r.Intn(3))}
			case 1:
				nd.Labels = nil
			}
			snd.publish(nd)
			want := nd.Clone()
			want.Name, want.Gen = "n2", snd.local.Gen
			if !reflect.DeepEqual(*snd.local, want) {
				t.Fatalf("seed %d step %d: the sender keeps another dataset than the one published", seed, step)
			}
			// the caller writes what it published, in place
			for k, i := range nd.Services {
				for rid, res := range i.Resources {
					res.Label = "written"
					i.Resources[rid] = res
				}
				nd.Services[k] = i
			}
			for k := range nd.Labels {
				nd.Labels[k] = "written"
			}
			if !reflect.DeepEqual(*snd.local, want) {
				t.Fatalf("seed %d step %d: the caller's writes reached the sender's copy", seed, step)
			}
			nd = want.Clone() // the next change starts from what was published
			nd.Name = "n2"
		}
	}
}
