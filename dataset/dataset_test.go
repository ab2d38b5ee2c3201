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
		"none":      {},
		"started":   {Expect: ExpectStarted},
		"placed":    {Expect: ExpectPlaced},
		"placed@n2": {Expect: ExpectPlaced, Node: "n2"},
		"stopped":   {Expect: ExpectStopped, Node: "ignored"},
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
