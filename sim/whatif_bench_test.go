package sim

import (
	"testing"
	"time"
)

func BenchmarkWhatIfKill(b *testing.B) {
	s := threeNodes()
	evs, _ := ParseWhatIfEvent("kill", "n1")
	for i := 0; i < b.N; i++ {
		if _, err := WhatIf(s, []WhatIfEvent{evs}, 60*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
