package chaos

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// The short fixed-seed round that `make test` runs as root: a few minutes
// of random tests over a real cluster in namespaces, with the audits after
// each (the long round is `make chaos`, see docs/chaos.md).
func TestChaosShortRound(t *testing.T) {
	if why := NetnsUnavailable(); why != "" {
		t.Skip("the chaos round: " + why)
	}
	if why := IptablesUnavailable(); why != "" {
		t.Skip("the chaos round: " + why)
	}
	if testing.Short() {
		t.Skip("the chaos round takes minutes: not with -short")
	}
	bin := t.TempDir()
	if err := testbed.BuildNode(bin, ""); err != nil {
		t.Fatalf("build the binaries: %v", err)
	}
	var only []string
	for _, n := range TestNames() {
		if d, ok := KnownDefects[n]; ok {
			t.Logf("left out of this round, a known defect: %s: %s", n, d)
			continue
		}
		only = append(only, n)
	}
	var out strings.Builder
	// first the split brain with quorum on and the restart ladder, then
	// tests at random (quorum mixed: the daemons' mode changes as they ask)
	first := []string{"SplitBrain/q", "ResourceRecover/q"}
	rep, err := Run(Config{Bin: bin, Seed: 1, Duration: 100 * time.Second, First: first, Only: only, Out: &out, StopOnFailure: true})
	t.Log("\n" + out.String())
	if errors.Is(err, ErrNoNamespace) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() {
		t.Fatalf("the chaos round failed; replay: %s", rep.Replay())
	}
	for i, e := range first {
		if i >= len(rep.Sequence) || rep.Sequence[i] != e {
			t.Fatalf("the round ran %v, want %v first", rep.Sequence, first)
		}
	}
	if len(rep.Outcomes) < 3 {
		t.Fatalf("only %d tests ran", len(rep.Outcomes))
	}
	if !slices.ContainsFunc(rep.Outcomes, func(o Outcome) bool { return o.Recovery > 0 }) {
		t.Fatal("no recovery time measured")
	}
	if _, err := os.Stat(bin + "/nodemgr"); err != nil {
		t.Fatal(err)
	}
}

// TestChaosMixedVersions: MixedVersions once, in a round whose last node
// runs the previous release (packaging/previous-release, built from the
// history), then the audits. As root, like the short round.
func TestChaosMixedVersions(t *testing.T) {
	if why := NetnsUnavailable(); why != "" {
		t.Skip("the chaos round: " + why)
	}
	if why := IptablesUnavailable(); why != "" {
		t.Skip("the chaos round: " + why)
	}
	if testing.Short() {
		t.Skip("a chaos round: not with -short")
	}
	prev, err := testbed.PreviousRelease()
	if errors.Is(err, testbed.ErrNoHistory) {
		t.Skipf("no previous release: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := testbed.BuildNode(bin, ""); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep, err := Run(Config{Bin: bin, Previous: prev, Seed: 1, Tests: []string{"MixedVersions"}, Quorum: QuorumOff, Out: &out, StopOnFailure: true})
	t.Log("\n" + out.String())
	if errors.Is(err, ErrNoNamespace) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() || len(rep.Outcomes) != 1 {
		t.Fatalf("MixedVersions failed (%d outcomes); replay: %s", len(rep.Outcomes), rep.Replay())
	}
}
