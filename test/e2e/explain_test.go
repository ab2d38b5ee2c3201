package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/test/testbed"
)

// svcmgr explain on a real two-node cluster: n1 is frozen, so the ha
// service starts on n2; both nodes explain n2 as the leader and n1 as
// excluded by its freeze, in text and JSON, now and for a start now.
func TestExplainOnCluster(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	c["n1"].must("nodemgr", "freeze")
	waitFor(t, 20*time.Second, "n2 sees n1 frozen", func() bool { return c["n2"].status().Nodes["n1"].Frozen })
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, ""))
	waitFor(t, 30*time.Second, "web up on n2 (n1 is frozen)", upOnlyOn(c["n1"], "web", "n2"))

	explainJSON := func(n *node, args ...string) api.Explanation {
		t.Helper()
		out := n.must("svcmgr", append([]string{"-s", "web", "explain", "--format", "json"}, args...)...)
		var e api.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("explain --format json on %s: %v\n%s", n.name, err, out)
		}
		return e
	}
	for _, name := range []string{"n1", "n2"} {
		for _, start := range []bool{false, true} {
			var args []string
			if start {
				args = []string{"--start"}
			}
			e := explainJSON(c[name], args...)
			if e.Local != name || e.Leader != "n2" || e.Hypothetical != start || e.Monitor == nil || len(e.Verdicts) != 2 {
				t.Fatalf("explain %v on %s: got local %q leader %q hypothetical %v monitor %v verdicts %+v, want leader n2",
					args, name, e.Local, e.Leader, e.Hypothetical, e.Monitor, e.Verdicts)
			}
			if v := e.Verdicts[1]; v.Node != "n1" || v.Candidate || len(v.Reasons) != 1 || v.Reasons[0] != "node frozen" {
				t.Fatalf("explain %v on %s: got n1's verdict %+v, want excluded: node frozen", args, name, v)
			}
			if !start && (len(e.Running) != 1 || e.Running[0] != "n2") {
				t.Fatalf("explain on %s: got running %v, want [n2]", name, e.Running)
			}
		}
	}
	e := explainJSON(c["n1"])
	if e.Monitor.Flags != "FL" || e.Monitor.Blocked != "service up on n2" {
		t.Fatalf("explain on n1: got monitor %+v, want flags FL (frozen, natural leader), held by the service up on n2", e.Monitor)
	}
	e = explainJSON(c["n2"], "--start")
	if e.Monitor.Next != "ready" || e.Monitor.ReadyUntil.IsZero() {
		t.Fatalf("explain --start on n2: got monitor %+v, want ready with its window's end", e.Monitor)
	}

	out := c["n1"].must("svcmgr", "-s", "web", "explain")
	t.Logf("svcmgr -s web explain on n1:\n%s", out)
	// web runs on its leader n2: nothing to start ("would start it now" was
	// said of a service already up)
	for _, want := range []string{"leader: n2 (it runs there; natural leader n1)", "running: n2",
		"  1  n2  nodes order #2", "     n1  nodes order #1  node frozen", "held by: service up on n2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("explain on n1: got\n%s\nwant a line with %q", out, want)
		}
	}
	if r := c["n1"].run("svcmgr", "-s", "nope", "explain"); r.Code != 1 || !strings.Contains(r.Err, "no service matches") {
		t.Fatalf("explain of an unknown service: got %s, want exit 1 naming it", r)
	}
}
