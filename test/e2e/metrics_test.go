package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"haven/dataset"
	"haven/test/testbed"
)

// setNodeKey adds a line to the [node] section of n's node.toml.
func setNodeKey(t *testing.T, n *node, line string) {
	t.Helper()
	p := filepath.Join(n.root, "etc", "node.toml")
	writeFile(t, p, strings.Replace(readFile(t, p), "[node]\n", "[node]\n"+line+"\n", 1))
}

// scrape fetches http://addr/metrics and parses it with the Prometheus
// text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v\n%s", err, body)
	}
	return mfs
}

// value is the value of the series of family name whose labels include
// labels (name, value pairs); ok false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// A real daemon serves /metrics on node.metrics_addr: its peers up, the
// states of its instance, the start it ran, the heartbeat's traffic, the
// decision passes, the Go runtime and the process.
func TestMetricsScrapedFromARealDaemon(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	setNodeKey(t, c["n1"], fmt.Sprintf("metrics_addr = %q", addr))
	for _, n := range names {
		c[n].startDaemon()
	}
	waitFor(t, 20*time.Second, "n1 sees n2 up", func() bool { return peerStatus(c["n1"], "n2") == dataset.NodeUp })
	// restart = 1: the restart ladder restarts the app once when it dies
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2"]`, "")+"restart = 1\n")
	waitFor(t, 30*time.Second, "web up on n1", upOnlyOn(c["n1"], "web", "n1"))

	var mfs map[string]*dto.MetricFamily
	waitFor(t, 20*time.Second, "the metrics show web up and idle on n1", func() bool {
		mfs = scrape(t, addr)
		up, _ := value(mfs, "haven_service_avail", "service", "web", "state", "up")
		idle, _ := value(mfs, "haven_service_monitor_state", "service", "web", "state", "idle")
		return up == 1 && idle == 1
	})
	want := []struct {
		name   string
		labels []string
		check  func(float64) bool
		what   string
	}{
		{"haven_heartbeat_peers_up", nil, func(v float64) bool { return v == 1 }, "1"},
		{"haven_heartbeat_peer_up", []string{"peer", "n2"}, func(v float64) bool { return v == 1 }, "1"},
		{"haven_service_starts_total", []string{"service", "web"}, func(v float64) bool { return v == 1 }, "1"},
		{"haven_service_start_duration_seconds", []string{"service", "web"}, func(v float64) bool { return v == 1 }, "1 sample"},
		{"haven_service_avail", []string{"service", "web", "state", "down"}, func(v float64) bool { return v == 0 }, "0"},
		{"haven_service_frozen", []string{"service", "web"}, func(v float64) bool { return v == 0 }, "0"},
		{"haven_node_monitor_state", []string{"state", "idle"}, func(v float64) bool { return v == 1 }, "1"},
		{"haven_node_info", []string{"node", "n1", "cluster", "test"}, func(v float64) bool { return v == 1 }, "1"},
		{"haven_heartbeat_frames_sent_total", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"haven_heartbeat_frames_received_total", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"haven_heartbeat_bytes_received_total", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"haven_heartbeat_frames_rejected_total", nil, func(v float64) bool { return v >= 0 }, "present"},
		{"haven_decision_pass_duration_seconds", nil, func(v float64) bool { return v > 0 }, "> 0 samples"},
		{"haven_events_total", []string{"kind", "action_begin"}, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"go_goroutines", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"process_resident_memory_bytes", nil, func(v float64) bool { return v > 0 }, "> 0"},
	}
	for _, w := range want {
		v, ok := value(mfs, w.name, w.labels...)
		if !ok || !w.check(v) {
			t.Errorf("%s%v = %v (present %v), want %s", w.name, w.labels, v, ok, w.what)
		}
	}
	if mf := mfs["haven_service_avail"]; mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
		t.Errorf("haven_service_avail: type %v help %q", mf.GetType(), mf.GetHelp())
	}

	// the app dies: the ladder restarts it, counted per resource
	killService(t, c["n1"], "web")
	waitFor(t, 20*time.Second, "the ladder's restart counted", func() bool {
		mfs = scrape(t, addr)
		v, _ := value(mfs, "haven_resource_restarts_total", "service", "web", "rid", "app#main")
		return v == 1
	})
	if v, _ := value(mfs, "haven_resource_failures_total", "service", "web", "rid", "app#main"); v != 1 {
		t.Errorf("haven_resource_failures_total = %v, want 1", v)
	}
}

// A bad node.metrics_addr is a config error (exit 2, file, line and key),
// an address of another host too; an address already in use stops the
// daemon at start, naming the key (exit 1: it may be free at the next try).
func TestMetricsAddrErrors(t *testing.T) {
	t.Parallel() // one daemon of its own root, no port
	n := newNode(t, "n1", "")
	setNodeKey(t, n, `metrics_addr = "localhost"`)
	r := n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Out+r.Err, `node.toml:2: node.metrics_addr: invalid address "localhost": want host:port`) {
		t.Fatalf("got %s, want exit 2 naming node.toml:2 node.metrics_addr", r)
	}

	// an address that is not one of this host's (TEST-NET-1): a config
	// error too, not a failure that systemd would restart forever
	n = newNode(t, "n1", "")
	setNodeKey(t, n, `metrics_addr = "192.0.2.1:9477"`)
	r = n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Out+r.Err, `node.toml:2: node.metrics_addr: cannot serve the metrics: "192.0.2.1:9477" is not an address of this host`) {
		t.Fatalf("got %s, want exit 2 naming node.toml:2 node.metrics_addr", r)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	n = newNode(t, "n1", "")
	setNodeKey(t, n, fmt.Sprintf("metrics_addr = %q", busy.Addr().String()))
	r = n.run("nodemgr", "daemon", "start")
	if r.Code != 1 || !strings.Contains(r.Out+r.Err, "node.metrics_addr: cannot serve the metrics: listen tcp "+busy.Addr().String()) ||
		!strings.Contains(r.Out+r.Err, "address already in use") {
		t.Fatalf("got %s, want exit 1 naming node.metrics_addr and the busy address", r)
	}
}
