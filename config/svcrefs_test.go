package config_test

import (
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// A create or set whose hard affinity or parents name no service of the
// cluster, or whose parents lead back to the service, is refused naming
// the file, the line and the key; a name the replaced config held is let
// through.
func TestCheckServiceRefs(t *testing.T) {
	parse := func(name, body string) *config.ServiceConfig {
		t.Helper()
		cfg, err := tomlfile.ParseService(name+".toml", name, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	others := map[string][]string{"db": nil, "app": {"web"}, "cache": {"db"}}
	for _, c := range []struct {
		body, want string
	}{
		{"[DEFAULT]\norchestrate = \"ha\"\nhard_affinity = [\"nosuchsvc\"]\n",
			"web.toml:3: DEFAULT.hard_affinity: no service nosuchsvc in the cluster: no node would ever be a candidate"},
		{"[DEFAULT]\nparents = [\"db\", \"nope@n1\"]\n", "web.toml:2: DEFAULT.parents: no service nope in the cluster: it would wait for that parent forever"},
		{"[DEFAULT]\nparents = [\"app\"]\n", "web.toml:2: DEFAULT.parents: a cycle of parents: web -> app -> web"},
		{"[DEFAULT]\nparents = [\"cache@n2\"]\n", ""},
		{"[DEFAULT]\nhard_affinity = [\"db\"]\nparents = [\"db\"]\nsoft_affinity = [\"nosuchsvc\"]\nhard_anti_affinity = [\"nosuchsvc\"]\n", ""},
	} {
		_, err := config.CheckServiceRefs(parse("web", c.body), nil, others, false)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", c.body, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	// a 2-cycle made by the service that closes it, whatever its order
	if _, err := config.CheckServiceRefs(parse("db", "[DEFAULT]\nparents = [\"cache\"]\n"), nil, others, false); err == nil || !strings.Contains(err.Error(), "db -> cache -> db") {
		t.Errorf("a 2-cycle of parents: %v", err)
	}
	// the replaced config held the name: an edit of another key goes through
	prev := parse("web", "[DEFAULT]\nhard_affinity = [\"gone\"]\n")
	if _, err := config.CheckServiceRefs(parse("web", "[DEFAULT]\nhard_affinity = [\"gone\"]\npriority = 5\n"), prev, others, false); err != nil {
		t.Errorf("an edit of a config naming a deleted service: %v", err)
	}
}

// With force (create --force, set --force: configs installed in any
// order), a name of no service is a warning naming the file, the line and
// the key, one per key; a cycle of parents is refused all the same.
func TestCheckServiceRefsForce(t *testing.T) {
	others := map[string][]string{"db": nil, "app": {"web"}}
	cfg, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nhard_affinity = [\"later\", \"db\"]\nparents = [\"later@n1\", \"later@n2\", \"other\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.CheckServiceRefs(cfg, nil, others, false); err == nil {
		t.Fatal("refused without force: accepted")
	}
	warns, err := config.CheckServiceRefs(cfg, nil, others, true)
	if err != nil {
		t.Fatalf("with force: %v, want warnings", err)
	}
	want := []string{
		"web.toml:2: DEFAULT.hard_affinity: no service later in the cluster yet: installed anyway (--force): no node is a candidate until it runs (no such service)",
		"web.toml:3: DEFAULT.parents: no service later, other in the cluster yet: installed anyway (--force): the service waits for that parent until it is created and up",
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings %v, want %q", warns, want)
	}
	for i, w := range warns {
		if w.Error() != want[i] {
			t.Errorf("warning %d: %q, want %q", i, w.Error(), want[i])
		}
	}
	cyc, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nparents = [\"app\", \"later\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.CheckServiceRefs(cyc, nil, others, true); err == nil || !strings.Contains(err.Error(), "a cycle of parents: web -> app -> web") {
		t.Errorf("a cycle with force: %v, want refused", err)
	}
}
