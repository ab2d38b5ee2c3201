package affinity

import (
	"reflect"
	"testing"

	"haven/config"
)

func runningSet(pairs ...string) RunningFunc {
	m := map[string]bool{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]+"/"+pairs[i+1]] = true
	}
	return func(node, svc string) bool { return m[node+"/"+svc] }
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
