package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
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
	cfg := c.ServiceConfig(c.Services[0])
	for _, want := range []string{"monitor_action = \"switch\"\n", "monitor = true\n", "restart = 2\n", "restart_delay = \"1s\"\n", "timeout = \"10s\"\n"} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("the service config lacks %q:\n%s", want, cfg)
		}
	}
	if i, j := strings.Index(cfg, "monitor_action"), strings.Index(cfg, "[app.main]"); i > j {
		t.Fatalf("monitor_action must be in [DEFAULT]:\n%s", cfg)
	}
}

// The node action the nodes run for crash_command and reboot_command only
// records it; cluster.toml names the arbitrator in both quorum modes.
func TestNodeActionAndClusterToml(t *testing.T) {
	w := t.TempDir()
	c := &Cluster{Work: w, Journal: filepath.Join(w, "journal"), secret: "00", members: "n1 = \"192.0.2.1:10000\"\n"}
	if err := c.writeScripts(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if out, err := exec.Command(filepath.Join(w, "node-action.sh"), "n1", "crash").CombinedOutput(); err != nil {
			t.Fatalf("node-action.sh: %v: %s", err, out)
		}
	}
	got := c.nodeActions()
	if len(got) != 2 || !strings.HasSuffix(got[0], " n1 crash") {
		t.Fatalf("node actions %q, want two 'n1 crash' lines", got)
	}
	if again := c.nodeActions(); len(again) != 0 {
		t.Fatalf("node actions read twice: %q", again)
	}
	for _, q := range []bool{false, true} {
		s := c.clusterToml(q)
		for _, want := range []string{fmt.Sprintf("quorum = %v\n", q), "[arbitrator.a1]\n", "uri = \"http://192.0.2.254:8080/\"\n", "timeout = \"2s\"\n"} {
			if !strings.Contains(s, want) {
				t.Fatalf("cluster.toml (quorum %v) lacks %q:\n%s", q, want, s)
			}
		}
	}
}

// Sequence entries: Name/q runs with quorum on; the modes refuse what
// they cannot run.
func TestQuorumEntries(t *testing.T) {
	if n, q := parseEntry("SplitBrain/q"); n != "SplitBrain" || !q {
		t.Fatalf("parseEntry(SplitBrain/q) = %s %v", n, q)
	}
	if n, q := parseEntry("Pause"); n != "Pause" || q || entry("Pause", true) != "Pause/q" {
		t.Fatalf("parseEntry(Pause) = %s %v", n, q)
	}
	if checkMode(QuorumOff, "NearQuorumPoint", false) == "" || checkMode(QuorumOff, "Pause", true) == "" {
		t.Fatal("-quorum off accepted a test with quorum on")
	}
	if checkMode(QuorumMixed, "NearQuorumPoint", false) != "" || checkMode(QuorumOn, "Pause", false) != "" {
		t.Fatal("a runnable entry refused")
	}
	for _, c := range []struct {
		mode, name    string
		current, coin bool
		want          bool
	}{
		{QuorumMixed, "SplitBrain", false, true, true},
		{QuorumMixed, "SplitBrain", true, false, false},
		{QuorumMixed, "NearQuorumPoint", false, false, true},
		{QuorumMixed, "Pause", true, false, true},
		{QuorumMixed, "Pause", false, true, false},
		{QuorumOn, "SplitBrain", false, false, true},
		{QuorumOff, "Pause", true, true, false},
	} {
		if got := wantQuorum(c.mode, c.name, c.current, c.coin); got != c.want {
			t.Errorf("wantQuorum(%s, %s, current %v, coin %v) = %v, want %v", c.mode, c.name, c.current, c.coin, got, c.want)
		}
	}
}

// docs/behaviour.md 3's vote as the split tests compute it: a tie loses.
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

// The OCF mode: the services are ocf:heartbeat:Dummy and ocf:chaos:app,
// an agent over the same scripts, with the OCF exit codes; the nodes'
// ocf_root holds it with links to the system's heartbeat agents.
func TestOCFModeServiceAndAgent(t *testing.T) {
	if why := OCFUnavailable(); why != "" {
		t.Skip(why)
	}
	w := t.TempDir()
	c := &Cluster{cfg: Config{OCF: true}, Work: w, Journal: filepath.Join(w, "journal"), Services: []Service{{Name: "svc1", Nodes: []string{"n1", "n2"}}}}
	if err := c.writeScripts(); err != nil {
		t.Fatal(err)
	}
	cfg := c.ServiceConfig(c.Services[0])
	for _, want := range []string{"[ocf.1-state]\nagent = \"heartbeat:Dummy\"", "[ocf.2-main]\nagent = \"chaos:app\"", "monitor = true\nrestart = 2\n", "monitor_action = \"switch\""} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("the service config lacks %q:\n%s", want, cfg)
		}
	}
	parsed, err := tomlfile.ParseService("svc1.toml", "svc1", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var budget time.Duration
	for _, r := range parsed.Resources {
		budget += r.StopBound()
	}
	if budget != appTimeout {
		t.Fatalf("the resources' stop budget is %s, want appTimeout %s (the split tests' bounds)", budget, appTimeout)
	}
	agent := filepath.Join(c.OCFRoot(), "resource.d", "chaos", "app")
	v := t.TempDir()
	run := func(action string) int {
		cmd := exec.Command(agent, action)
		cmd.Env = append(os.Environ(), "OCF_RESKEY_svc=svc1", "OCF_RESKEY_var="+v, "OCF_RESKEY_CRM_meta_on_node=n1")
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := run("monitor"); code != 7 {
		t.Fatalf("monitor before start: %d, want 7", code)
	}
	if run("start") != 0 || run("monitor") != 0 {
		t.Fatal("start, then monitor: want 0 and 0")
	}
	if run("stop") != 0 || run("monitor") != 7 || run("stop") != 0 {
		t.Fatal("stop, monitor, stop again: want 0, 7, 0")
	}
	if j := readJournalKinds(t, c.Journal); j != "start stop" {
		t.Fatalf("journal %q, want start stop", j)
	}
	if _, err := os.Stat(filepath.Join(c.OCFRoot(), "resource.d", "heartbeat", "Dummy")); err != nil {
		t.Fatalf("no heartbeat agents in the OCF root: %v", err)
	}
}

func readJournalKinds(t *testing.T, path string) string {
	t.Helper()
	evs, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return strings.Join(k, " ")
}
