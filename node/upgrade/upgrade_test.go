package upgrade

import (
	"strings"
	"testing"
)

func TestLevel(t *testing.T) {
	old := func(n string) Member { return Member{Name: n, Heard: true, Up: true} } // first release: says nothing
	cur := func(n string) Member { return Member{Name: n, Heard: true, Up: true, Max: 2, Level: 1} }
	for _, tc := range []struct {
		name            string
		self, persisted int
		members         []Member
		want            int
		waiting         string
	}{
		{"all old", 2, 0, []Member{old("n2"), old("n3")}, 1, "n2 (reads formats up to 1), n3 (reads formats up to 1)"},
		{"one old left", 2, 0, []Member{cur("n2"), old("n3")}, 1, "n3 (reads formats up to 1)"},
		{"all new", 2, 0, []Member{cur("n2"), cur("n3")}, 2, ""},
		{"a member never heard holds it", 2, 1, []Member{cur("n2"), {Name: "n3"}}, 1, "n3 (not heard yet)"},
		{"a member down waits, even heard new", 2, 1, []Member{cur("n2"), {Name: "n3", Heard: true, Max: 2}}, 1, "n3 (down)"},
		{"never down by itself", 2, 2, []Member{cur("n2"), old("n3")}, 2, "n3 (reads formats up to 1)"},
		{"adopted from a member already there", 2, 1, []Member{{Name: "n2", Heard: true, Up: true, Max: 2, Level: 2}, {Name: "n3"}}, 2, "n3 (not heard yet)"},
		{"not adopted beyond what self reads", 2, 1, []Member{{Name: "n2", Heard: true, Up: true, Max: 3, Level: 3}, {Name: "n3"}}, 1, "n3 (not heard yet)"},
		{"a newer member does not lift past self", 2, 1, []Member{{Name: "n2", Heard: true, Up: true, Max: 3, Level: 2}, cur("n3")}, 2, ""},
		{"alone", 2, 0, nil, 2, ""},
	} {
		got, waiting := Level(tc.self, tc.persisted, tc.members)
		if got != tc.want || strings.Join(waiting, ", ") != tc.waiting {
			t.Errorf("%s: Level = %d, waiting %q; want %d, %q", tc.name, got, waiting, tc.want, tc.waiting)
		}
	}
}

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		name        string
		self, level int
		members     []Member
		ok          bool
		reason      string
	}{
		{"previous release, one step", 2, 1, []Member{{Name: "n2", Heard: true, Up: true}}, true, ""},
		{"same", 2, 2, []Member{{Name: "n2", Heard: true, Up: true, Max: 2}}, true, ""},
		{"next release, one step", 2, 2, []Member{{Name: "n2", Heard: true, Up: true, Max: 3}}, true, ""},
		{"two steps ahead", 2, 2, []Member{{Name: "n2", Heard: true, Up: true, Max: 4}}, false, "n2 reads formats up to 4, more than one version step from this node's 2"},
		{"two steps behind", 3, 1, []Member{{Name: "n2", Heard: true, Up: true, Max: 1}}, false, "n2 reads formats up to 1, more than one version step from this node's 3"},
		{"below the level (an old binary back after the level moved)", 2, 2, []Member{{Name: "n2", Heard: true, Up: true, Max: 1}}, false, "n2 reads formats up to 1, below the cluster feature level 2"},
		{"a down member does not count", 2, 2, []Member{{Name: "n2", Heard: true, Max: 1}}, true, ""},
	} {
		ok, reason := Compatible(tc.self, tc.level, tc.members)
		if ok != tc.ok || reason != tc.reason {
			t.Errorf("%s: Compatible = %v %q; want %v %q", tc.name, ok, reason, tc.ok, tc.reason)
		}
	}
}

func TestSafeNext(t *testing.T) {
	up := []Member{{Name: "n2", Heard: true, Up: true}, {Name: "n3", Heard: true, Up: true, Max: 2}}
	if v := SafeNext(2, 1, up, ""); !v.Safe || !strings.Contains(v.Reason, "until n2 (reads formats up to 1) run the new release") {
		t.Errorf("all up: %+v", v)
	}
	down := []Member{{Name: "n2", Heard: true}, {Name: "n3", Heard: true, Up: true, Max: 2}}
	if v := SafeNext(2, 1, down, ""); v.Safe || !strings.Contains(v.Reason, "not every member is up (n2)") {
		t.Errorf("n2 down: %+v", v)
	}
	unheard := []Member{{Name: "n2", Up: true}, {Name: "n3", Heard: true, Up: true, Max: 2}}
	if v := SafeNext(2, 1, unheard, ""); v.Safe || !strings.Contains(v.Reason, "the data of n2 has not come yet") {
		t.Errorf("n2 not heard: %+v", v)
	}
	if v := SafeNext(2, 1, up, "read-only file system"); v.Safe || !strings.Contains(v.Reason, "read-only") {
		t.Errorf("state not written: %+v", v)
	}
	far := []Member{{Name: "n2", Heard: true, Up: true, Max: 4}}
	if v := SafeNext(2, 2, far, ""); v.Safe || !strings.HasPrefix(v.Reason, "no: ") {
		t.Errorf("two steps: %+v", v)
	}
	done := []Member{{Name: "n2", Heard: true, Up: true, Max: 2, Level: 2}}
	if v := SafeNext(2, 2, done, ""); !v.Safe || !strings.Contains(v.Reason, "feature level 2") {
		t.Errorf("done: %+v", v)
	}
}
