package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/arbitrator"
	"haven/test/testbed"
)

// The one-vote arbitrator as a sysadmin runs it: a config refused with
// its file and key (exit 2), started in the background, answering a
// node's report over UDP through the sealed wire, its status showing the
// node, stopped.
func TestArbitratorDaemon(t *testing.T) {
	t.Parallel() // an arbitrator of its own root, on ports of its own (testbed.FreePort)
	root := filepath.Join(t.TempDir(), "arb")
	os.MkdirAll(filepath.Join(root, "etc"), 0o700)
	run := func(args ...string) testbed.Result {
		r, err := testbed.Run(filepath.Join(binDir, "nodemgr"), root, append([]string{"arbitrator"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Cleanup(func() { run("stop") })
	conf := filepath.Join(root, "etc", "arbitrator.toml")
	writeFile(t, conf, "[arbitrator]\nlisten = \"127.0.0.1:1\"\n\n[cluster.prod]\nsecret = \"abc\"\n")
	os.Chmod(conf, 0o600)
	if r := run("start"); r.Code != 2 || !strings.Contains(r.Err, "arbitrator.toml:5: cluster.prod.secret: must be 64 hex digits") {
		t.Fatalf("a bad secret: want exit 2 with the file, line and key; got %s", r)
	}
	port, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	mport, err := testbed.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	secret := "6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01"
	writeFile(t, conf, fmt.Sprintf("[arbitrator]\nlisten = \"127.0.0.1:%d\"\nmetrics_addr = \"127.0.0.1:%d\"\n\n[cluster.prod]\nsecret = %q\n", port, mport, secret))
	os.Chmod(conf, 0o600)
	if r := run("start"); r.Code != 0 || !strings.Contains(r.Out, "arbitrator started") {
		t.Fatalf("start: %s", r)
	}
	k, _ := hex.DecodeString(secret)
	rep := &arbitrator.Reporter{Addr: fmt.Sprintf("127.0.0.1:%d", port), Cluster: "prod", Node: "n1", Secret: k, Inc: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g, _, err := rep.Report(ctx, arbitrator.ReportBody{Partition: []string{"n1", "n2"}, Running: 1}, time.Now)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if g.Granted || !strings.Contains(g.Reason, "gives no vote until") {
		t.Fatalf("a freshly started arbitrator granted: %+v", g)
	}
	var st arbitrator.Status
	waitFor(t, 5*time.Second, "n1 in the arbitrator's status", func() bool {
		r := run("status", "--format", "json")
		return r.Code == 0 && json.Unmarshal([]byte(r.Out), &st) == nil && len(st.Clusters) == 1 && len(st.Clusters[0].Nodes) == 1
	})
	if n := st.Clusters[0].Nodes[0]; n.Node != "n1" || n.Running != 1 || st.Counters.Reports != 1 {
		t.Fatalf("status: %+v", st)
	}
	if out := run("status").Out; !strings.Contains(out, "cluster prod") || !strings.Contains(out, "node   n1") {
		t.Fatalf("status text:\n%s", out)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"haven_arbitrator_reports_total 1", "haven_arbitrator_refusals_total 1", `haven_arbitrator_node_granted{cluster="prod",node="n1"} 0`, `haven_arbitrator_winner_size{cluster="prod"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if r := run("stop"); r.Code != 0 || !strings.Contains(r.Out, "arbitrator stopped") {
		t.Fatalf("stop: %s", r)
	}
	if r := run("status"); r.Code != 1 {
		t.Fatalf("status of a stopped arbitrator: want exit 1, got %s", r)
	}
}
