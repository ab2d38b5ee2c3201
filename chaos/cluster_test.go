package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestScriptsAndConfigs(t *testing.T) {
	w := t.TempDir()
	c := &Cluster{Work: w, Journal: filepath.Join(w, "journal"), Services: []Service{{Name: "svc1", Nodes: []string{"n1", "n2"}}}}
	if err := c.writeScripts(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"start.sh", "stop.sh", "check.sh"} {
		if out, err := exec.Command("sh", "-n", filepath.Join(w, s)).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", s, err, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(w, "start.sh"))
	if !strings.Contains(string(b), `[ -e "`+w+`/fail-$svc-$node" ]`) || !strings.Contains(string(b), ">> "+c.Journal) {
		t.Fatalf("start.sh:\n%s", b)
	}
	// a start refused on demand journals nothing and exits 1
	v := filepath.Join(w, "var")
	os.MkdirAll(v, 0o755)
	os.WriteFile(filepath.Join(w, "fail-svc1-n1"), nil, 0o644)
	out, err := exec.Command(filepath.Join(w, "start.sh"), "svc1", "n1", v).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "fails on n1") {
		t.Fatalf("start with the fail marker: %v: %s", err, out)
	}
	if j, _ := os.ReadFile(c.Journal); len(j) != 0 {
		t.Fatalf("a refused start journaled: %s", j)
	}
	if cfg := c.ServiceConfig(c.Services[0]); strings.Contains(cfg, "restart") || strings.Contains(cfg, "monitor") {
		t.Fatalf("without Ladder the config names the ladder:\n%s", cfg)
	}
	c.cfg.Ladder = true
	cfg := c.ServiceConfig(c.Services[0])
	for _, want := range []string{"monitor_action = \"switch\"\n", "monitor = true\n", "restart = 2\n", "restart_delay = \"1s\"\n"} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("with Ladder the config lacks %q:\n%s", want, cfg)
		}
	}
	if i, j := strings.Index(cfg, "monitor_action"), strings.Index(cfg, "[app.main]"); i > j {
		t.Fatalf("monitor_action must be in [DEFAULT]:\n%s", cfg)
	}
}

// BEHAVIOUR 3's vote as the prepared quorum tests compute it: a tie loses.
func TestSurvives(t *testing.T) {
	for _, c := range []struct {
		live, votes, total int
		want               bool
	}{
		{1, 0, 4, false}, // 3 nodes + 1 arbitrator: the lone node
		{2, 1, 4, true},  // the two with the arbitrator
		{2, 0, 4, false}, // exactly half: a tie loses
		{1, 1, 4, false}, // the lone node with the arbitrator: half
		{2, 0, 3, true},  // 3 nodes, no arbitrator
		{1, 0, 2, false}, // 2 nodes: a split loses on both sides
		{1, 1, 3, true},  // 2 nodes + arbitrator: the side that reaches it
		{3, 0, 5, true},
		{2, 0, 5, false},
	} {
		if got := survives(c.live, c.votes, c.total); got != c.want {
			t.Errorf("survives(live %d, votes %d, total %d) = %v, want %v", c.live, c.votes, c.total, got, c.want)
		}
	}
}
