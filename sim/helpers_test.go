package sim

import (
	"slices"
	"testing"
	"time"

	"haven/config/tomlfile"
)

// webCluster is n1 n2 running, with web (ha, on n1 and n2) up on n1 and
// the services of more (name: config text) installed.
func webCluster(t *testing.T, opt Options, more map[string]string) *Cluster {
	t.Helper()
	c, err := New([]string{"n1", "n2"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	svcs := map[string]string{"web": "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\norchestrate = \"ha\"\n"}
	for name, text := range more {
		svcs[name] = text
	}
	for _, name := range sortedKeys(svcs) {
		cfg, err := tomlfile.ParseService(name+".toml", name, []byte(svcs[name]))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddService(cfg, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"n1", "n2"} {
		if err := c.Start(n, 0); err != nil {
			t.Fatal(err)
		}
	}
	c.Run(20 * time.Second)
	if up := c.UpOn("web"); !slices.Equal(up, []string{"n1"}) {
		t.Fatalf("web up on %v, want n1", up)
	}
	return c
}
