package chaos

import (
	"fmt"
	"slices"
	"time"
)

// MixedVersions: the round's last node runs the previous release
// (Config.Previous, built from the history by testbed.PreviousRelease),
// as in the middle of a rolling upgrade (docs/operations.md,
// "Upgrading"). Every test of the round then runs on that mixed cluster;
// this one checks what the upgrade promises on it: the nodes on the
// current code stay at feature level 1 (they cannot move while a member
// reads only version 1) with ha on, and a service goes to the old node and
// back through a failover, never twice (the audits read the journal).

// checkPrevious says why test name cannot run in a round whose previous
// release is prev ("": none).
func checkPrevious(prev, name string) string {
	if name == "MixedVersions" && prev == "" {
		return "MixedVersions needs the previous release's binaries (-previous DIR)"
	}
	return ""
}

// oldNode is the node on the previous release ("" when none).
func (c *Cluster) oldNode() string {
	for _, n := range c.Names {
		if c.Nodes[n].Bin != "" {
			return n
		}
	}
	return ""
}

func testMixedVersions(t *T) error {
	old := t.C.oldNode()
	if old == "" {
		return fmt.Errorf("no node runs the previous release (-previous)")
	}
	cur := slices.DeleteFunc(slices.Clone(t.C.Names), func(n string) bool { return n == old })
	for _, n := range cur {
		st, err := t.C.Nodes[n].Status()
		if err != nil {
			return err
		}
		if st.Cluster.FeatureLevel != 1 || !st.Cluster.Compat || st.Nodes[old].Format != 1 {
			return fmt.Errorf("%s sees feature level %d, compat %v, %s reading formats up to %d: want 1, true, 1 with %s on the previous release",
				n, st.Cluster.FeatureLevel, st.Cluster.Compat, old, st.Nodes[old].Format, old)
		}
	}
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	if where[s] != old {
		from := pick(t, cur)
		t.Fault("switch of %s to %s (previous release), asked of %s", s, old, from)
		if err := t.C.Nodes[from].must(60*time.Second, "svcmgr", "-s", s, "switch", "--to", old, "--wait", "--time", "50s"); err != nil {
			return err
		}
	}
	if _, err := t.C.upOnlyOn(s, t.C.Names, 30*time.Second); err != nil {
		return err
	}
	// the old node crashes: its services fail over to the current code
	where, err = t.where()
	if err != nil {
		return err
	}
	svcs := servicesOn(where, old)
	t.Fault("crash of %s (previous release; kill -9 of its daemon and of the apps of %v)", old, svcs)
	if err := t.C.Nodes[old].Kill9(); err != nil {
		return err
	}
	for _, sv := range svcs {
		if err := t.C.killApp(sv, old); err != nil {
			return err
		}
	}
	start := time.Now()
	for _, sv := range svcs {
		to, err := t.C.upOnlyOn(sv, cur, 40*time.Second)
		if err != nil {
			return err
		}
		t.Note("%s failed over from %s (previous release) to %s in %s", sv, old, to, time.Since(start).Round(100*time.Millisecond))
	}
	t.Fault("restart of %s on the previous release", old)
	if err := t.C.Nodes[old].StartDaemon(); err != nil {
		return err
	}
	if _, err := t.where(); err != nil {
		return err
	}
	// asked of the old node: a switch to the current code
	to := pick(t, cur)
	t.Fault("switch of %s to %s, asked of %s (previous release)", s, to, old)
	if err := t.C.Nodes[old].must(60*time.Second, "svcmgr", "-s", s, "switch", "--to", to, "--wait", "--time", "50s"); err != nil {
		return err
	}
	got, err := t.C.upOnlyOn(s, t.C.Names, 30*time.Second)
	if err == nil && got != to {
		err = fmt.Errorf("%s up on %s after its switch to %s", s, got, to)
	}
	return err
}
