package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"haven/api"
	"haven/placement"
	"haven/test/chaos"
	"haven/test/testbed"
)

// ---------------------------------------------------------------------------
// netns-scale: n daemons, each in its own network
// namespace on one bridge (chaos.Bed), with nsvc services on every node:
// idle CPU, RSS and bytes per node, propagation of a change on n1 to every
// peer, detection of a killed node.

// loadNow is the host's load as uptime prints it.
func loadNow() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// scaleService is a service of one app resource on every node whose start
// and stop are `true` and which has no check: its status is n/a, so no
// process runs for it while the cluster idles. orchestrate is "no".
func scaleService(nodes string) string {
	return fmt.Sprintf("[DEFAULT]\nnodes = %s\n\n[app.a]\nstart = \"true\"\nstop = \"true\"\n", nodes)
}

func (b *bnode) daemonStatus() (*api.DaemonStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.c.DaemonStatus(ctx)
}

// waitPeersUp waits until every node of live is out of rejoin and sees
// every other node of live up, through the small daemon status (the
// cluster status of 500 services on 32 nodes is megabytes).
func (c *cluster) waitPeersUp(d time.Duration, live []*bnode) error {
	return waitFor(d, "every node to see every other up", func() bool {
		for _, a := range live {
			ds, err := a.daemonStatus()
			if err != nil || ds.Monitor != "idle" {
				return false
			}
			up := map[string]bool{}
			for _, p := range ds.Peers {
				up[p.Name] = p.Status == "up"
			}
			for _, b := range live {
				if b != a && !up[b.name] {
					return false
				}
			}
		}
		return true
	})
}

// vethBytes is what each host of the bed sent on its eth0: the bytes the
// bridge side of its veth received (Ethernet frames, 14 bytes of header
// more than the IP bytes of `clusterbench idle`).
func vethBytes(bed *chaos.Bed) (map[string]uint64, error) {
	out, err := chaos.IP("-n", bed.BrNS, "-s", "-j", "link", "show")
	if err != nil {
		return nil, err
	}
	var links []struct {
		IfName string `json:"ifname"`
		Stats  struct {
			RX struct {
				Bytes uint64 `json:"bytes"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("ip -s -j link in %s: %w", bed.BrNS, err)
	}
	sent := map[string]uint64{}
	for _, l := range links {
		if n, ok := strings.CutPrefix(l.IfName, "v-"); ok {
			sent[n] = l.Stats.RX.Bytes
		}
	}
	return sent, nil
}

// frozenSeen reports whether b's decision core sees node's instance of svc
// frozen (`svcmgr explain`: the verdict of node names "instance frozen").
// The explanation of one service is a few KB where the status object of
// the whole cluster is megabytes: polling it loads the host far less.
func frozenSeen(b *bnode, svc, node string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := b.c.Explain(ctx, svc, false)
	if err != nil {
		return false, err
	}
	for _, v := range e.Verdicts {
		if v.Node == node {
			return slices.Contains(v.Reasons, placement.ReasonInstanceFrozen), nil
		}
	}
	return false, fmt.Errorf("%s: no verdict for %s in the explanation of %s", b.name, node, svc)
}

type spread struct{ xs []float64 }

func (s *spread) add(x float64) { s.xs = append(s.xs, x) }
func (s *spread) String() string {
	if len(s.xs) == 0 {
		return "-"
	}
	xs := slices.Sorted(slices.Values(s.xs))
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return fmt.Sprintf("min %.2f median %.2f mean %.2f max %.2f", xs[0], xs[len(xs)/2], sum/float64(len(xs)), xs[len(xs)-1])
}

// pprofInNS is where n1's daemon serves pprof with -heap: loopback of its
// own network namespace.
const pprofInNS = "127.0.0.1:6060"

// fetchInNS GETs url from inside the network namespace ns into out (curl).
func fetchInNS(ns, url, out string) error {
	b, err := exec.Command("ip", "netns", "exec", ns, "curl", "-sSf", "-o", out, url).CombinedOutput()
	if err != nil {
		return fmt.Errorf("curl %s in %s: %w: %s", url, ns, err, b)
	}
	return nil
}

func netnsScale(n, nsvc, changes, kills int, poll time.Duration, watch int, o opts, settle, window time.Duration, heapOut string) error {
	fmt.Printf("\n## netns-scale: %d daemons, one network namespace each on a bridge, %d services on every node (app without check, orchestrate no), hb.timeout %s, hb.interval %s\n", n, nsvc, o.timeout, o.interval)
	fmt.Printf("load at the start: %s\n", loadNow())
	c, bed, names, err := newNetnsCluster(n, o)
	if err != nil {
		return err
	}
	defer c.close()
	// The services are installed on n1's disk before the daemons start;
	// the peers receive them from n1 as they join, once. (500 creates
	// through the API cost O(services) on every node each: every peer
	// re-merges every config and rewrites its state file, 200 services in
	// 5 minutes on 16 daemons. The same files on every node's disk are
	// worse: each node gives its copies a version of its own origin, and
	// every join installs the winner's 500 configs again everywhere.)
	svc := scaleService(testbed.NodeList(names))
	for i := range nsvc {
		if err := testbed.WriteFile(filepath.Join(c.nodes[0].root, "etc", "services", fmt.Sprintf("s%03d.toml", i)), svc, 0o644); err != nil {
			return err
		}
	}
	c.nodes[0].newState = true // configs on its disk before its first start
	t0 := time.Now()
	if heapOut != "" {
		os.Setenv("HAVEN_PPROF_ADDR", pprofInNS) // n1 only, in its namespace
	}
	for i, b := range c.nodes {
		if err := b.start(); err != nil {
			return err
		}
		if i == 0 {
			os.Unsetenv("HAVEN_PPROF_ADDR")
		}
	}
	if err := c.waitPeersUp(300*time.Second, c.nodes); err != nil {
		return err
	}
	fmt.Printf("%d daemons with %d services each started and converged in %s (bed %s)\n", n, nsvc, time.Since(t0).Round(time.Millisecond), bed.ID)
	t0 = time.Now()
	if err := waitFor(600*time.Second, "every service known on every node", func() bool {
		for _, b := range c.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			l, err := b.c.Services(ctx)
			cancel()
			if err != nil || len(l) < nsvc {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	fmt.Printf("%d services known on every node %s later\n", nsvc, time.Since(t0).Round(time.Millisecond))
	time.Sleep(settle)
	if err := scaleIdle(c, window); err != nil {
		return err
	}
	if heapOut != "" {
		if err := fetchInNS(c.nodes[0].ns, "http://"+pprofInNS+"/debug/pprof/heap", heapOut); err != nil {
			fmt.Printf("heap profile: %v\n", err)
		} else {
			fmt.Printf("heap profile of n1 in %s (go tool pprof -sample_index=inuse_space -top %s)\n", heapOut, heapOut)
		}
	}
	if err := scalePropagation(c, changes, poll, watch, o); err != nil {
		return err
	}
	if err := scaleDetection(c, kills, o); err != nil {
		return err
	}
	fmt.Printf("load at the end: %s\n", loadNow())
	return nil
}

// scaleIdle samples every daemon's CPU and RSS and every node's bytes over
// the window, with no client talking to the daemons.
func scaleIdle(c *cluster, window time.Duration) error {
	n := len(c.nodes)
	fmt.Printf("idle window %s, load before: %s\n", window, loadNow())
	pids := map[string]int{}
	before := map[string]procSample{}
	hb0 := map[string]api.HBStatus{}
	for _, b := range c.nodes {
		// a daemon of a loaded host may not answer within one call's 10 s
		var ds *api.DaemonStatus
		if err := waitFor(60*time.Second, b.name+"'s daemon status", func() bool {
			var err error
			ds, err = b.daemonStatus()
			return err == nil
		}); err != nil {
			return fmt.Errorf("%w (daemon pid %d alive: %v)", err, testbed.DaemonPID(b.root), testbed.Alive(testbed.DaemonPID(b.root)))
		}
		hb0[b.name] = ds.HB
		pids[b.name] = ds.Pid
		ps, err := readProc(ds.Pid)
		if err != nil {
			return err
		}
		before[b.name] = ps
	}
	by0, err := vethBytes(c.bed)
	if err != nil {
		return err
	}
	t0 := time.Now()
	maxRSS := map[string]int{}
	for time.Since(t0) < window {
		time.Sleep(min(5*time.Second, window-time.Since(t0)))
		for _, b := range c.nodes {
			if s, err := readProc(pids[b.name]); err == nil && s.rss > maxRSS[b.name] {
				maxRSS[b.name] = s.rss
			}
		}
	}
	el := time.Since(t0).Seconds()
	by1, err := vethBytes(c.bed)
	if err != nil {
		return err
	}
	var cpu, kids, rss, bps spread
	var fulls, needs, dropped uint64
	for _, b := range c.nodes {
		s, err := readProc(pids[b.name])
		if err != nil {
			return err
		}
		cpu.add(float64(s.self-before[b.name].self) / clkTck / el * 100)
		kids.add(float64(s.children-before[b.name].children) / clkTck / el * 100)
		rss.add(float64(maxRSS[b.name]) / 1024)
		bps.add(float64(by1[b.name]-by0[b.name]) / el)
		if ds, err := b.daemonStatus(); err == nil {
			fulls += ds.HB.FullsSent - hb0[b.name].FullsSent
			needs += ds.HB.NeedsSent - hb0[b.name].NeedsSent
			dropped += ds.HB.Dropped - hb0[b.name].Dropped
		}
	}
	fmt.Printf("CPU per daemon (%% of a core, utime+stime over %.0f s): %s\n", el, &cpu)
	fmt.Printf("CPU of the processes each daemon waited for (%% of a core, cutime+cstime: its checks): %s\n", &kids)
	fmt.Printf("RSS per daemon (MB, max in window): %s\n", &rss)
	fmt.Printf("bytes sent per node (B/s, Ethernet frames on its veth): %s\n", &bps)
	fmt.Printf("heartbeat counters over the window, all nodes: fulls sent %d, needs sent %d, dropped %d\n", fulls, needs, dropped)
	fmt.Printf("load after: %s\n", loadNow())
	xs := slices.Sorted(slices.Values(cpu.xs))
	rs := slices.Sorted(slices.Values(rss.xs))
	bs := slices.Sorted(slices.Values(bps.xs))
	fmt.Printf("RESULT netns-scale idle n=%d cpu_pct_median=%.2f cpu_pct_max=%.2f rss_mb_median=%.1f rss_mb_max=%.1f bytes_per_s_median=%.0f bytes_per_s_max=%.0f\n",
		n, xs[n/2], xs[n-1], rs[n/2], rs[n-1], bs[n/2], bs[n-1])
	return nil
}

// scalePropagation flips the local freeze of s000 on n1 and polls the
// explanation of s000 on the watched peers until n1's instance shows the
// new value. Per change, "seen by all" is the latest of the peers.
func scalePropagation(c *cluster, changes int, poll time.Duration, watch int, o opts) error {
	n := len(c.nodes)
	if watch <= 0 || watch > n-1 {
		watch = n - 1
	}
	const svc = "s000"
	fmt.Printf("propagation: %d changes (freeze/thaw --local of %s on n1), %d peers polled per change (svcmgr explain, pause %s); load: %s\n", changes, svc, watch, poll, loadNow())
	n1 := c.nodes[0]
	var peer, all, lower, ack stats
	seen := func(b *bnode, want bool) (bool, error) {
		ok, err := frozenSeen(b, svc, n1.name)
		return err == nil && ok == want, err
	}
	misses, err := flipAndPoll(c, svc, changes, watch, poll, 20*time.Second, 300*time.Millisecond, seen, func(ch flipChange) {
		ack.add(ch.tAck.Sub(ch.t0))
		var last time.Duration
		for _, s := range ch.seen {
			peer.add(s.at.Sub(ch.t0))
			lower.add(s.prev.Sub(ch.t0))
			last = max(last, s.at.Sub(ch.t0))
		}
		all.add(last)
	})
	if err != nil {
		return err
	}
	fmt.Printf("samples %d (changes x peers), missed (>20s) %d\n", len(peer.xs), misses)
	fmt.Printf("seen by one peer (upper bound): p50 %s p90 %s p99 %s max %s; lower bound p50 %s p99 %s\n",
		ms(peer.pct(50)), ms(peer.pct(90)), ms(peer.pct(99)), ms(peer.max()), ms(lower.pct(50)), ms(lower.pct(99)))
	fmt.Printf("seen by all %d polled peers (per change): p50 %s p90 %s p99 %s max %s\n", watch, ms(all.pct(50)), ms(all.pct(90)), ms(all.pct(99)), ms(all.max()))
	fmt.Printf("freeze --local API call on n1: p50 %s p99 %s\n", ms(ack.pct(50)), ms(ack.pct(99)))
	fmt.Printf("RESULT netns-scale propagation n=%d hb=%s/%s peer_p50=%s peer_p99=%s all_p50=%s all_p99=%s all_max=%s misses=%d\n",
		n, o.timeout, o.interval, ms(peer.pct(50)), ms(peer.pct(99)), ms(all.pct(50)), ms(all.pct(99)), ms(all.max()), misses)
	return nil
}

// scaleDetection kills -9 the daemon of the last node kills times and
// reads the peer_down events of every other node (the daemons' clocks,
// the host's), then restarts it.
func scaleDetection(c *cluster, kills int, o opts) error {
	n := len(c.nodes)
	victim := c.nodes[n-1]
	others := c.nodes[:n-1]
	fmt.Printf("detection: %d kills -9 of %s's daemon, peer_down on the %d others; load: %s\n", kills, victim.name, len(others), loadNow())
	var all stats
	lost := 0
	err := killRounds(c, kills, o.timeout+20*time.Second, func() error { return c.waitPeersUp(300*time.Second, c.nodes) },
		func(r int, victim string, peers int, got map[string]time.Duration) {
			var run stats
			for _, d := range got {
				run.add(d)
				all.add(d)
			}
			lost += peers - len(got)
			fmt.Printf("kill %d: %d/%d peers declared %s down, first %s p50 %s last %s after the kill\n", r+1, len(got), peers, victim, ms(run.min()), ms(run.pct(50)), ms(run.max()))
		})
	if err != nil {
		return err
	}
	fmt.Printf("RESULT netns-scale detection n=%d timeout=%s samples=%d min=%s p50=%s p99=%s max=%s excess_max=%s not_seen=%d\n",
		n, o.timeout, len(all.xs), ms(all.min()), ms(all.pct(50)), ms(all.pct(99)), ms(all.max()), ms(all.max()-o.timeout), lost)
	return nil
}

// flipChange is one change of flipAndPoll: when it was asked (t0), when
// n1's API answered (tAck), and when each polled peer saw it.
type flipChange struct {
	t0, tAck time.Time
	seen     []flipSeen
}

// flipSeen is a peer's first poll that showed the change: its end (at, an
// upper bound), the start of the poll before it (prev, a lower bound), and
// the polls it took.
type flipSeen struct {
	at, prev time.Time
	polls    int
}

// flipAndPoll flips the local freeze of svc on the first node changes
// times; after each, watch peers (in turn over the others) are polled with
// seen, pausing poll between two polls, until it reports the new value or
// deadline passed (a miss). done gets each change once its peers ended;
// then a random pause of pause to pause + 200ms.
func flipAndPoll(c *cluster, svc string, changes, watch int, poll, deadline, pause time.Duration,
	seen func(b *bnode, want bool) (bool, error), done func(flipChange)) (misses int, err error) {
	n := len(c.nodes)
	n1 := c.nodes[0]
	for i := range changes {
		want := i%2 == 0
		action := "thaw"
		if want {
			action = "freeze"
		}
		ch := flipChange{t0: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := n1.c.Action(ctx, api.ActionRequest{Name: svc, Action: action, Local: true})
		cancel()
		if err != nil {
			return misses, fmt.Errorf("%s --local: %w", action, err)
		}
		ch.tAck = time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for k := range watch {
			b := c.nodes[1+(i*watch+k)%(n-1)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				prev := ch.t0
				polls := 0
				for end := ch.t0.Add(deadline); time.Now().Before(end); {
					rs := time.Now()
					ok, err := seen(b, want)
					re := time.Now()
					polls++
					if err == nil && ok {
						mu.Lock()
						ch.seen = append(ch.seen, flipSeen{at: re, prev: prev, polls: polls})
						mu.Unlock()
						return
					}
					prev = rs
					time.Sleep(poll)
				}
				mu.Lock()
				misses++
				mu.Unlock()
			}()
		}
		wg.Wait()
		done(ch)
		time.Sleep(pause + rand.N(200*time.Millisecond))
	}
	return misses, nil
}

// newNetnsCluster makes a bed of n network namespaces (n1..nN on a
// bridge, their names) and the cluster of their daemons on it
// (netns-scale, flex-scale); the caller closes the cluster.
func newNetnsCluster(n int, o opts) (*cluster, *chaos.Bed, []string, error) {
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	bed, err := chaos.NewBed(names)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := newClusterOn(n, o, bed, nil)
	if err != nil {
		if c != nil {
			c.close()
		}
		return nil, nil, nil, err
	}
	return c, bed, names, nil
}
