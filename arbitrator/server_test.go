package arbitrator

import (
	"context"
	"crypto/ecdh"
	"encoding/hex"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/quorum"
)

const testSecret = "6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01"

// fakeNow is a clock the test moves; it starts at the real time so that
// reports' send times (the wall clock) are within the allowed skew.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func startServer(t *testing.T, clusters map[string]string) (*Server, *fakeNow) {
	t.Helper()
	conf := map[string]config.ArbitratorCluster{}
	for name, secret := range clusters {
		conf[name] = config.ArbitratorCluster{Secret: secret}
	}
	return startServerConf(t, conf, nil)
}

func startServerConf(t *testing.T, clusters map[string]config.ArbitratorCluster, key *ecdh.PrivateKey) (*Server, *fakeNow) {
	t.Helper()
	clk := &fakeNow{t: time.Now()}
	s, err := Listen(Config{Conf: &config.ArbitratorConf{Listen: "127.0.0.1:0", Clusters: clusters}, Now: clk.now, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, clk
}

func reporter(s *Server, node, secret string, inc uint64) *Reporter {
	k, _ := hex.DecodeString(secret)
	return &Reporter{Addr: s.Addr().String(), Cluster: "prod", Node: node, Secret: k, Inc: inc}
}

func report(t *testing.T, r *Reporter, running int, part ...string) (GrantBody, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	g, _, err := r.Report(ctx, ReportBody{Partition: part, Running: running}, time.Now)
	return g, err
}

// Through the wire: nothing granted during the start-up wait, then the
// whole cluster granted; a cut of the link between the nodes leaves the
// vote with the side running the service.
func TestServerGrantsOnePartition(t *testing.T) {
	s, clk := startServer(t, map[string]string{"prod": testSecret})
	n1, n2 := reporter(s, "n1", testSecret, 1), reporter(s, "n2", testSecret, 1)
	if g, err := report(t, n1, 0, "n1", "n2"); err != nil || g.Granted {
		t.Fatalf("during the start-up wait: %+v, %v", g, err)
	}
	clk.add(Lease + quorum.LeaseMargin)
	for _, r := range []*Reporter{n1, n2} {
		if g, err := report(t, r, 0, "n1", "n2"); err != nil || !g.Granted || !g.Exclusive {
			t.Fatalf("%s in the whole cluster: %+v, %v", r.Node, g, err)
		}
	}
	// the link between n1 and n2 is cut; n2 runs the service
	clk.add(time.Second)
	report(t, n1, 0, "n1")
	report(t, n2, 1, "n2")
	clk.add(time.Second)
	if g, _ := report(t, n1, 0, "n1"); g.Granted {
		t.Fatalf("n1 (running nothing) granted after the cut: %+v", g)
	}
	if g, _ := report(t, n2, 1, "n2"); !g.Granted || !slices.Equal(g.Winner, []string{"n2"}) {
		t.Fatalf("n2 (running the service) refused after the cut: %+v", g)
	}
	st := s.Status()
	if len(st.Clusters) != 1 || !slices.Equal(st.Clusters[0].Winner, []string{"n2"}) || len(st.Clusters[0].Nodes) != 2 {
		t.Fatalf("status: %+v", st)
	}
}

// A wrong secret, an unknown cluster, a replayed report and a report whose
// send time is far from the arbitrator's clock get no answer; each is
// counted, none crashes the server; garbage neither.
func TestServerRefusesForgedReplayedAndOld(t *testing.T) {
	s, clk := startServer(t, map[string]string{"prod": testSecret})
	clk.add(Lease + quorum.LeaseMargin)
	other := "00" + testSecret[2:]
	if _, err := report(t, reporter(s, "n1", other, 1), 0, "n1"); err == nil {
		t.Fatal("a report under another secret was answered")
	}
	stranger := reporter(s, "n1", testSecret, 1)
	stranger.Cluster = "test"
	if _, err := report(t, stranger, 0, "n1"); err == nil {
		t.Fatal("a report of an unknown cluster was answered")
	}
	// a captured report sent again
	k, _ := hex.DecodeString(testSecret)
	frame, err := seal(keys{secret: k}, typeReport, "prod", "n1", 7, 1, ReportBody{Partition: []string{"n1"}, SentUnixMs: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("udp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answers := func() int {
		n := 0
		buf := make([]byte, MaxDatagram)
		for {
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.Read(buf); err != nil {
				return n
			}
			n++
		}
	}
	c.Write(frame)
	c.Write(frame)
	if n := answers(); n != 1 {
		t.Fatalf("a report sent twice got %d answers, want 1", n)
	}
	// an older run of the node after a later one answered
	old, _ := seal(keys{secret: k}, typeReport, "prod", "n1", 6, 9, ReportBody{Partition: []string{"n1"}, SentUnixMs: time.Now().UnixMilli()})
	c.Write(old)
	// a report sent long ago (replayed after a restart of the arbitrator)
	stale, _ := seal(keys{secret: k}, typeReport, "prod", "n1", 8, 1, ReportBody{Partition: []string{"n1"}, SentUnixMs: time.Now().Add(-time.Minute).UnixMilli()})
	c.Write(stale)
	c.Write([]byte("garbage"))
	c.Write(append([]byte{magic, version, typeReport, 4}, "prod"...))
	if n := answers(); n != 0 {
		t.Fatalf("an older run, an old report and garbage got %d answers", n)
	}
	if st := s.Status(); st.Counters.Rejected < 6 || st.Counters.Reports != 1 {
		t.Fatalf("counters: %+v", st.Counters)
	}
}

// A grant answers only its own report: sealed with the report's header, it
// does not open as the grant of the next one.
func TestGrantBoundToItsReport(t *testing.T) {
	k, _ := hex.DecodeString(testSecret)
	g1, err := seal(keys{secret: k}, typeGrant, "prod", "n1", 1, 1, GrantBody{Granted: true})
	if err != nil {
		t.Fatal(err)
	}
	h, ct, err := parseHeader(g1)
	if err != nil {
		t.Fatal(err)
	}
	var g GrantBody
	if err := open(keys{secret: k}, h, ct, &g); err != nil || !g.Granted {
		t.Fatalf("the grant does not open: %v", err)
	}
	h.seq = 2 // the header of the next report
	h.raw = appendHeader(nil, typeGrant, "prod", "n1", 1, 2)
	if err := open(keys{secret: k}, h, ct, &g); err == nil {
		t.Fatal("a grant opened as the answer of another report")
	}
}

// Hostile bytes never crash the arbitrator nor get an answer.
func FuzzHandle(f *testing.F) {
	k, _ := hex.DecodeString(testSecret)
	good, _ := seal(keys{secret: k}, typeReport, "prod", "n1", 1, 1, ReportBody{Partition: []string{"n1"}})
	f.Add(good)
	f.Add([]byte{magic, version, typeReport, 4, 'p', 'r', 'o', 'd', 2, 'n', '1'})
	f.Add([]byte("garbage"))
	s := &Server{now: time.Now, served: map[string]*served{"prod": {secret: k}}, books: map[string]*quorum.LeaseBook{"prod": quorum.NewLeaseBook(quorum.LeaseConfig{Lease: Lease, Fresh: Fresh}, time.Now())},
		last: map[runKey]uint64{}, nodes: map[string]map[string]*NodeSeen{"prod": {}}}
	s.log = zapNop()
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	f.Fuzz(func(t *testing.T, b []byte) {
		if out := s.handle(b, from); out != nil && !slices.Equal(b, good) {
			// only an authentic report is answered; the fuzzer cannot forge one
			if _, _, err := parseHeader(out); err != nil {
				t.Fatalf("answer that is no frame: %x", out)
			}
		}
	})
}

func zapNop() *zap.Logger { return zap.NewNop() }

// TestWireVersions: frames of version 1 (written) and 2 (read, for the
// next release) parse; 0 and 3 are not this wire's.
func TestWireVersions(t *testing.T) {
	for v, want := range map[byte]bool{0: false, 1: true, 2: true, 3: false} {
		_, _, err := parseHeader([]byte{magic, v, typeReport, 1, 'c', 1, 'n', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
		if (err == nil) != want {
			t.Errorf("version %d: %v", v, err)
		}
	}
}
