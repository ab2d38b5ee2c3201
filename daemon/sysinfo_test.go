package daemon

import "testing"

// Only a meaningful change of the load or memory is published: 0.1 and a
// tenth of the load, 2 points of memory.
func TestSysinfoChanged(t *testing.T) {
	for _, c := range []struct {
		pubLoad, load, pubMem, mem float64
		want                       bool
	}{
		{0.5, 0.55, 50, 50, false},
		{0.5, 0.6, 50, 50, true},
		{8, 8.5, 50, 50, false},
		{8, 8.8, 50, 50, true},
		{50, 46, 50, 50, false},
		{50, 45, 50, 50, true},
		{1, 1, 50, 51.5, false},
		{1, 1, 50, 48, true},
	} {
		if got := sysinfoChanged(c.pubLoad, c.load, c.pubMem, c.mem); got != c.want {
			t.Errorf("load %v -> %v, mem %v -> %v: changed %v, want %v", c.pubLoad, c.load, c.pubMem, c.mem, got, c.want)
		}
	}
}
