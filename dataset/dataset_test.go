package dataset

import "testing"

// Versions order edits and targets without wall clocks: the counter first,
// then the origin node's name, so every node picks the same winner.
func TestVersionNewer(t *testing.T) {
	cases := []struct {
		a, b Version
		want bool
	}{
		{Version{2, "n1"}, Version{1, "n9"}, true},
		{Version{1, "n9"}, Version{2, "n1"}, false},
		{Version{3, "n3"}, Version{3, "n1"}, true},
		{Version{3, "n1"}, Version{3, "n3"}, false},
		{Version{3, "n1"}, Version{3, "n1"}, false},
		{Version{1, "n1"}, Version{}, true},
	}
	for _, c := range cases {
		if got := c.a.Newer(c.b); got != c.want {
			t.Errorf("%+v.Newer(%+v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if c.a != c.b && c.a.Newer(c.b) == c.b.Newer(c.a) {
			t.Errorf("%+v and %+v: exactly one must be newer", c.a, c.b)
		}
	}
}

func TestTargetString(t *testing.T) {
	cases := map[string]Target{
		"none":       {},
		"started":    {Expect: ExpectStarted},
		"placed":     {Expect: ExpectPlaced},
		"placed@n2":  {Expect: ExpectPlaced, Node: "n2"},
		"stopped":    {Expect: ExpectStopped},
		"stopped@n2": {Expect: ExpectStopped, Node: "n2"},
	}
	for want, tg := range cases {
		if got := tg.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", tg, got, want)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	n := Node{
		Labels:   map[string]string{"env": "PRD"},
		Services: map[string]Instance{"web": {Resources: map[string]Resource{"app#web": {Status: StatusUp}}}},
		Targets:  map[string]Target{"web": {Expect: ExpectStarted}},
		Configs:  map[string]ConfigEntry{"web": {Raw: "x"}},
		Clears:   map[string]ClearRequest{"web": {Node: "n1"}},
	}
	c := n.Clone()
	c.Labels["env"] = "DEV"
	c.Services["web"].Resources["app#web"] = Resource{Status: StatusDown}
	c.Targets["web"] = Target{}
	c.Configs["web"] = ConfigEntry{}
	c.Clears["web"] = ClearRequest{}
	if n.Labels["env"] != "PRD" || n.Services["web"].Resources["app#web"].Status != StatusUp ||
		n.Targets["web"].Expect != ExpectStarted || n.Configs["web"].Raw != "x" || n.Clears["web"].Node != "n1" {
		t.Fatalf("Clone shares maps with the original: %+v", n)
	}
}

// Config entries are ordered by (version, digest): the newer version wins;
// under one version the higher digest wins, and a content beats a
// tombstone. Exactly one of two different entries wins, so every node
// picks the same one whatever the order it hears them in.
func TestConfigEntryWins(t *testing.T) {
	a, b := ConfigDigest([]byte("a")), ConfigDigest([]byte("b"))
	lo, hi := a, b
	if lo > hi {
		lo, hi = hi, lo
	}
	v1, v2 := Version{1, "n1"}, Version{2, "n1"}
	cases := []struct {
		name string
		x, y ConfigEntry
		want bool
	}{
		{"newer version, lower digest", ConfigEntry{Version: v2, Digest: lo}, ConfigEntry{Version: v1, Digest: hi}, true},
		{"older version, higher digest", ConfigEntry{Version: v1, Digest: hi}, ConfigEntry{Version: v2, Digest: lo}, false},
		{"same version, higher digest", ConfigEntry{Version: v1, Digest: hi}, ConfigEntry{Version: v1, Digest: lo}, true},
		{"same version, lower digest", ConfigEntry{Version: v1, Digest: lo}, ConfigEntry{Version: v1, Digest: hi}, false},
		{"same version and digest", ConfigEntry{Version: v1, Digest: lo}, ConfigEntry{Version: v1, Digest: lo}, false},
		{"content over tombstone", ConfigEntry{Version: v1, Digest: lo}, ConfigEntry{Version: v1, Deleted: true}, true},
		{"newer tombstone", ConfigEntry{Version: v2, Deleted: true}, ConfigEntry{Version: v1, Digest: hi}, true},
		{"anything over nothing", ConfigEntry{Version: v1, Digest: lo}, ConfigEntry{}, true},
	}
	for _, c := range cases {
		if got := c.x.Wins(c.y); got != c.want {
			t.Errorf("%s: Wins = %v, want %v", c.name, got, c.want)
		}
		if c.x.Version != c.y.Version || c.x.Digest != c.y.Digest {
			if c.x.Wins(c.y) == c.y.Wins(c.x) {
				t.Errorf("%s: exactly one of the two must win", c.name)
			}
		}
	}
}

func TestConfigDigestAndIncludes(t *testing.T) {
	if d := ConfigDigest([]byte("")); d != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("ConfigDigest(\"\") = %s, want the SHA-256 of nothing", d)
	}
	e := ConfigEntry{Version: Version{Counter: 9, Origin: "n1"}, Includes: map[string]uint64{"n1": 7}}
	if !e.IncludesEdit("n1", 7) || !e.IncludesEdit("n1", 3) || e.IncludesEdit("n1", 8) || e.IncludesEdit("n2", 1) {
		t.Fatalf("IncludesEdit wrong for %+v", e.Includes)
	}
	e.Deleted = true
	if e.IncludesEdit("n1", 1) {
		t.Fatal("a tombstone includes no edit")
	}
}
