package affinity

import (
	"reflect"
	"testing"

	"haven/config"
)

// runningSet is an Env where the given node, service pairs run.
func runningSet(pairs ...string) Env {
	m := map[string]Presence{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]+"/"+pairs[i+1]] = Running
	}
	return Env{Presence: func(node, svc string) Presence { return m[node+"/"+svc] }}
}

// claimEnv is an Env where the given node, service pairs are claimed
// (ready or starting, not up), with the given configs.
func claimEnv(cfgs []*config.ServiceConfig, pairs ...string) Env {
	m := map[string]Presence{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]+"/"+pairs[i+1]] = Claimed
	}
	return Env{
		Presence: func(node, svc string) Presence { return m[node+"/"+svc] },
		Config: func(svc string) *config.ServiceConfig {
			for _, c := range cfgs {
				if c.Name == svc {
					return c
				}
			}
			return nil
		},
	}
}

func TestHard(t *testing.T) {
	run := runningSet("n1", "svc1", "n2", "db")
	cases := []struct {
		name       string
		cfg        config.ServiceConfig
		node       string
		want       bool
		wantReason string
	}{
		{"affinity ok", config.ServiceConfig{Name: "svc2", HardAffinity: []string{"svc1"}}, "n1", true, ""},
		{"affinity ko", config.ServiceConfig{Name: "svc2", HardAffinity: []string{"svc1"}}, "n2", false, "hard affinity: svc1 not running"},
		{"affinity needs all", config.ServiceConfig{Name: "svc2", HardAffinity: []string{"svc1", "db"}}, "n1", false, "hard affinity: db not running"},
		{"anti ok", config.ServiceConfig{Name: "svc2", HardAntiAffinity: []string{"svc1"}}, "n2", true, ""},
		{"anti ko", config.ServiceConfig{Name: "svc2", HardAntiAffinity: []string{"svc1"}}, "n1", false, "hard anti-affinity: svc1 running"},
		{"anti any", config.ServiceConfig{Name: "svc2", HardAntiAffinity: []string{"svc1", "db"}}, "n2", false, "hard anti-affinity: db running"},
		{"self ignored", config.ServiceConfig{Name: "svc1", HardAntiAffinity: []string{"svc1"}}, "n1", true, ""},
		{"none", config.ServiceConfig{Name: "svc2"}, "n3", true, ""},
	}
	for _, c := range cases {
		got, reason := Hard(&c.cfg, c.node, run)
		if got != c.want || reason != c.wantReason {
			t.Errorf("%s: got %v %q, want %v %q", c.name, got, reason, c.want, c.wantReason)
		}
	}
}

func TestSortSoft(t *testing.T) {
	run := runningSet("n2", "svc1", "n3", "svc1", "n3", "noisy")
	cases := []struct {
		name string
		cfg  config.ServiceConfig
		in   []string
		want []string
	}{
		{"no rule keeps order", config.ServiceConfig{Name: "s"}, []string{"n3", "n1", "n2"}, []string{"n3", "n1", "n2"}},
		{"affinity moves ahead, stable", config.ServiceConfig{Name: "s", SoftAffinity: []string{"svc1"}}, []string{"n1", "n3", "n2"}, []string{"n3", "n2", "n1"}},
		{"anti moves behind", config.ServiceConfig{Name: "s", SoftAntiAffinity: []string{"svc1"}}, []string{"n2", "n3", "n1"}, []string{"n1", "n2", "n3"}},
		{"both", config.ServiceConfig{Name: "s", SoftAffinity: []string{"svc1"}, SoftAntiAffinity: []string{"noisy"}}, []string{"n1", "n3", "n2"}, []string{"n2", "n1", "n3"}},
		{"nobody satisfies: best effort", config.ServiceConfig{Name: "s", SoftAffinity: []string{"absent"}}, []string{"n2", "n1"}, []string{"n2", "n1"}},
	}
	for _, c := range cases {
		got := append([]string(nil), c.in...)
		SortSoft(&c.cfg, got, run)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestClaims: a claim (ready or starting, not up) never satisfies an
// affinity; it occupies the node for an anti-affinity when the rule holder
// yields (Yields).
func TestClaims(t *testing.T) {
	db := &config.ServiceConfig{Name: "db", Priority: 100}
	cases := []struct {
		name       string
		cfg        *config.ServiceConfig
		others     []*config.ServiceConfig
		want       bool
		wantReason string
	}{
		{"claimed does not satisfy hard affinity",
			&config.ServiceConfig{Name: "app", HardAffinity: []string{"db"}}, []*config.ServiceConfig{db},
			false, "hard affinity: db not running"},
		{"one-directional: the rule holder yields",
			&config.ServiceConfig{Name: "batch", Priority: 1, HardAntiAffinity: []string{"db"}}, []*config.ServiceConfig{db},
			false, "hard anti-affinity: db claimed"},
		{"unknown config: the rule holder yields",
			&config.ServiceConfig{Name: "batch", HardAntiAffinity: []string{"db"}}, nil,
			false, "hard anti-affinity: db claimed"},
		{"mutual: better priority keeps the node",
			&config.ServiceConfig{Name: "z", Priority: 10, HardAntiAffinity: []string{"db"}},
			[]*config.ServiceConfig{{Name: "db", Priority: 100, HardAntiAffinity: []string{"z"}}},
			true, ""},
		{"mutual: worse priority yields",
			&config.ServiceConfig{Name: "a", Priority: 200, HardAntiAffinity: []string{"db"}},
			[]*config.ServiceConfig{{Name: "db", Priority: 100, HardAntiAffinity: []string{"a"}}},
			false, "hard anti-affinity: db claimed"},
		{"mutual, same priority: lower name keeps the node",
			&config.ServiceConfig{Name: "app", Priority: 100, HardAntiAffinity: []string{"db"}},
			[]*config.ServiceConfig{{Name: "db", Priority: 100, HardAntiAffinity: []string{"app"}}},
			true, ""},
		{"mutual, same priority: higher name yields",
			&config.ServiceConfig{Name: "web", Priority: 100, HardAntiAffinity: []string{"db"}},
			[]*config.ServiceConfig{{Name: "db", Priority: 100, HardAntiAffinity: []string{"web"}}},
			false, "hard anti-affinity: db claimed"},
		{"mutual, mixed: the hard holder yields to the soft-only one",
			&config.ServiceConfig{Name: "app", Priority: 1, HardAntiAffinity: []string{"db"}},
			[]*config.ServiceConfig{{Name: "db", Priority: 100, SoftAntiAffinity: []string{"app"}}},
			false, "hard anti-affinity: db claimed"},
	}
	for _, c := range cases {
		got, reason := Hard(c.cfg, "n1", claimEnv(c.others, "n1", "db"))
		if got != c.want || reason != c.wantReason {
			t.Errorf("%s: got %v %q, want %v %q", c.name, got, reason, c.want, c.wantReason)
		}
	}
}

// TestYieldsExactlyOne: in every mutual pair exactly one side yields, and
// the rule holder facing a service without a rule against it always does.
func TestYieldsExactlyOne(t *testing.T) {
	rules := []func(c *config.ServiceConfig, other string){
		func(c *config.ServiceConfig, o string) { c.HardAntiAffinity = []string{o} },
		func(c *config.ServiceConfig, o string) { c.SoftAntiAffinity = []string{o} },
		func(c *config.ServiceConfig, o string) {
			c.SoftAntiAffinity = []string{o}
			c.HardAntiAffinity = []string{o}
		},
	}
	for _, pa := range []int{1, 100} {
		for _, pb := range []int{1, 100} {
			for ra := range rules {
				for rb := range rules {
					a := &config.ServiceConfig{Name: "a", Priority: pa}
					b := &config.ServiceConfig{Name: "b", Priority: pb}
					rules[ra](a, "b")
					rules[rb](b, "a")
					ya, yb := Yields(a, "b", b), Yields(b, "a", a)
					if ya == yb {
						t.Errorf("prio %d/%d rules %d/%d: a yields %v, b yields %v, want exactly one", pa, pb, ra, rb, ya, yb)
					}
					if ya != Yields(a, "b", b) {
						t.Errorf("not deterministic")
					}
				}
			}
			a := &config.ServiceConfig{Name: "a", Priority: pa, HardAntiAffinity: []string{"b"}}
			b := &config.ServiceConfig{Name: "b", Priority: pb}
			if !Yields(a, "b", b) {
				t.Errorf("prio %d/%d: a (rule holder, b has no rule) does not yield", pa, pb)
			}
		}
	}
}

func TestSoftScoreClaims(t *testing.T) {
	db := &config.ServiceConfig{Name: "db"}
	env := claimEnv([]*config.ServiceConfig{db}, "n1", "db")
	if got := SoftScore(&config.ServiceConfig{Name: "s", SoftAffinity: []string{"db"}}, "n1", env); got != 1 {
		t.Errorf("soft affinity toward a claim: got score %d, want 1 (a claim is not running)", got)
	}
	if got := SoftScore(&config.ServiceConfig{Name: "s", SoftAntiAffinity: []string{"db"}}, "n1", env); got != 1 {
		t.Errorf("soft anti-affinity against a claim: got score %d, want 1 (the holder yields)", got)
	}
}

// A hard affinity to a service the cluster does not have says so, rather
// than "not running" (a typo would otherwise wait silently); without
// configs (Env.Config nil) nothing is claimed about existence.
func TestHardAffinityToNoSuchService(t *testing.T) {
	cfg := config.ServiceConfig{Name: "web", HardAffinity: []string{"dbb"}}
	env := claimEnv([]*config.ServiceConfig{&cfg, {Name: "db"}})
	if ok, why := Hard(&cfg, "n1", env); ok || why != "hard affinity: dbb: no such service (a typo? it waits until one is created)" {
		t.Errorf("affinity to dbb: got %v %q", ok, why)
	}
	cfg.HardAffinity = []string{"db"}
	if _, why := Hard(&cfg, "n1", env); why != "hard affinity: db not running" {
		t.Errorf("affinity to db: got %q", why)
	}
	if _, why := Hard(&config.ServiceConfig{Name: "web", HardAffinity: []string{"dbb"}}, "n1", runningSet()); why != "hard affinity: dbb not running" {
		t.Errorf("without configs: got %q", why)
	}
}
