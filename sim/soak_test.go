package sim

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
)

// TestSoak drives a 5-node cluster with 6 services through seeded random
// crashes, daemon restarts, shutdowns and node freezes, then lets it settle with
// every node back and thawed: each ha service must then run on exactly one
// node. (Partitions and long daemon stops are left out: with quorum = false
// they may leave a service running twice, as documented.)
func TestSoak(t *testing.T) {
	for seed := int64(1); seed <= soakSeeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { soak(t, seed) })
	}
}

func soak(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	names := []string{"n1", "n2", "n3", "n4", "n5"}
	c, err := New(names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	svcs := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	for i, s := range svcs {
		nodes := append([]string(nil), names...)
		rng.Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		raw := fmt.Sprintf("[DEFAULT]\nnodes = [%q, %q, %q]\norchestrate = \"ha\"\n", nodes[0], nodes[1], nodes[2])
		if i == 5 {
			raw += "parents = [\"s1\"]\n"
		}
		cfg, err := tomlfile.ParseService(s+".toml", s, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddService(cfg, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if err := c.Start(n, 0); err != nil {
			t.Fatal(err)
		}
	}
	var script []string
	for step := 0; step < 60; step++ {
		n := names[rng.Intn(len(names))]
		node := c.Node(n)
		switch k := rng.Intn(6); {
		case node.d == nil:
			script = append(script, "start "+n)
			c.Start(n, 0)
		case k == 0:
			script = append(script, "crash "+n)
			c.Crash(n)
		case k == 1:
			script = append(script, "shutdown "+n)
			c.Stop(n, "shutdown", 0)
		case k == 2:
			script = append(script, "freeze "+n)
			c.Admin(n, "", "freeze", "", false)
		case k == 3:
			script = append(script, "thaw "+n)
			c.Admin(n, "", "thaw", "", false)
		case k == 4:
			script = append(script, "restart "+n)
			c.Stop(n, "restart", 0)
		}
		c.Run(time.Duration(1+rng.Intn(8)) * time.Second)
	}
	// everything back: every daemon runs, every node thawed
	for _, n := range names {
		if c.Node(n).d == nil {
			c.Start(n, 0)
		}
	}
	c.Run(5 * time.Second)
	for _, n := range names {
		c.Admin(n, "", "thaw", "", false)
	}
	c.Run(60 * time.Second)
	for _, s := range svcs {
		if up := c.UpOn(s); len(up) != 1 {
			t.Errorf("seed %d: %s up on %v, want exactly one node\nscript: %s\n%s", seed, s, up,
				strings.Join(script, "; "), c.FinalState())
		}
	}
}

var soakSeeds = int64(3)
