package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"haven/test/chaos"
)

// ---------------------------------------------------------------------------
// sidebyside: Haven, keepalived and Pacemaker/corosync,
// each on three nodes in network namespaces with a client pinging the VIP
// from a fourth, all running at once, measured in the same run: the VIP's
// failover after kill -9 of the owner's agent and the cut of its link (a
// host crash; the cut keeps the dead owner from answering for the VIP),
// alternating the systems crash after crash; idle CPU and memory per node.

// cleanups run at the end of the program, also on SIGINT/SIGTERM.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func registerCleanup(f func()) {
	cleanupMu.Lock()
	cleanups = append(cleanups, f)
	cleanupMu.Unlock()
}

func runCleanups() {
	cleanupMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanupMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// fastProfile is haven-fast, the fast failover profile of
// docs/operations.md ("Fast failover"): hb.timeout 1s (hb.interval a third
// of it), ready_period 16s (its default) with node.ready_fast_ack.
const fastProfile = "haven-16s@1s+fastack"

type sbsSystem struct {
	label  string
	bed    *chaos.Bed
	a      agent
	ping   *pinger
	fo     stats
	fails  []string
	owners []string

	cpu, rss, pss spread
	why           string // why it could not run ("" when it ran)
	cleanup       func()
}

// newSystem builds the bed of one system and starts it.
func newSystem(kind string, period time.Duration) (s *sbsSystem, err error) {
	s = &sbsSystem{label: kind}
	bed, err := chaos.NewBed(sbsNodes)
	if err != nil {
		return s, err
	}
	s.bed = bed
	var closeBed func()
	if kind == "haven-fast" {
		kind = fastProfile
	}
	switch {
	case strings.HasPrefix(kind, "haven-"):
		// haven-<ready_period>[@<hb.timeout>][+fastack]: hb.timeout 3s by
		// default, hb.interval a third of it; +fastack sets
		// node.ready_fast_ack = true on every node
		spec, fastAck := strings.CutSuffix(strings.TrimPrefix(kind, "haven-"), "+fastack")
		rs, ts, _ := strings.Cut(spec, "@")
		ready, perr := time.ParseDuration(rs)
		timeout := 3 * time.Second
		if perr == nil && ts != "" {
			timeout, perr = time.ParseDuration(ts)
		}
		if perr != nil || timeout <= 0 {
			bed.Close()
			return s, fmt.Errorf("%s: want haven-<ready_period>[@<hb.timeout>][+fastack], e.g. haven-1s, haven-100ms@1s or haven-16s+fastack: %v", kind, perr)
		}
		// the cluster owns the bed from here (closeAll closes it)
		c, err := newClusterOn(len(sbsNodes), opts{timeout: timeout, interval: timeout / 3, ready: ready, fastAck: fastAck}, bed, nil)
		if err != nil {
			return s, err
		}
		s.a = &haven{c: c}
		closeBed = c.close
	case kind == "keepalived", strings.HasPrefix(kind, "keepalived@"), kind == "pacemaker":
		var advert time.Duration
		if as, ok := strings.CutPrefix(kind, "keepalived@"); ok {
			advert, err = time.ParseDuration(as)
			if err != nil || advert < 10*time.Millisecond || advert > 40950*time.Millisecond || advert%(10*time.Millisecond) != 0 {
				bed.Close()
				return s, fmt.Errorf("%s: want keepalived@<advert_int>, in centiseconds from 10ms to 40.95s (VRRPv3 under a second), e.g. keepalived@100ms", kind)
			}
		}
		work, err := os.MkdirTemp("", "havenbench-"+strings.ReplaceAll(kind, "@", "-")+"-")
		if err != nil {
			bed.Close()
			return s, err
		}
		if kind != "pacemaker" {
			s.a = &keepalived{bed: bed, work: work, advert: advert}
		} else {
			s.a = &pacemaker{bed: bed, work: work, pid: map[string]int{}}
		}
		closeBed = func() {
			for _, err := range bed.Close() {
				fmt.Fprintln(os.Stderr, "cleanup:", err)
			}
			if os.Getenv("HAVENBENCH_KEEP") == "" {
				os.RemoveAll(work)
			} else {
				fmt.Fprintln(os.Stderr, "kept", work)
			}
		}
	default:
		bed.Close()
		return s, fmt.Errorf("unknown system %q (keepalived, keepalived@<advert_int>, pacemaker, haven-fast, haven-<ready_period>[@<hb.timeout>][+fastack])", kind)
	}
	a := s.a
	var once sync.Once
	s.cleanup = func() {
		once.Do(func() {
			if s.ping != nil {
				s.ping.close()
			}
			a.close()
			closeBed()
		})
	}
	registerCleanup(s.cleanup)
	defer func() {
		if err != nil {
			s.cleanup() // a system that cannot run loads the host no more
		}
	}()
	if err = bed.AddHost("cl", clientIP); err != nil {
		return s, err
	}
	if s.ping, err = newPinger(bed, "cl", vipAddr, period); err != nil {
		return s, err
	}
	if err = s.a.start(); err != nil {
		return s, err
	}
	_, err = s.waitStable(180 * time.Second)
	return s, err
}

// waitStable waits until exactly one node holds the VIP and the client
// gets answers from it, and returns that node.
func (s *sbsSystem) waitStable(d time.Duration) (string, error) {
	var owner string
	var last []string
	err := waitFor(d, s.label+": the VIP on one node, answering the client", func() bool {
		h, err := s.bed.Holders(vipAddr)
		last = h
		if err != nil || len(h) != 1 {
			return false
		}
		owner = h[0]
		mac, err := s.bed.MAC(owner)
		r := s.ping.last()
		return err == nil && r.mac == mac && time.Since(r.t) < 300*time.Millisecond
	})
	if err != nil {
		return "", fmt.Errorf("%w (holders %v)", err, last)
	}
	return owner, nil
}

// crash kills -9 the owner's agent, cuts its link, and measures the time
// from the kill to the first echo reply from another host; then it
// removes the stale VIP from the dead owner, restores its link, restarts
// its agent and waits for a stable VIP.
func (s *sbsSystem) crash() error {
	owner, err := s.waitStable(120 * time.Second)
	if err != nil {
		return err
	}
	mac, err := s.bed.MAC(owner)
	if err != nil {
		return err
	}
	tk := time.Now()
	if err := s.a.kill(owner); err != nil {
		return err
	}
	if err := s.bed.Cut(owner); err != nil {
		return err
	}
	r, ferr := s.ping.firstAfter(tk, mac, 90*time.Second)
	if ferr == nil {
		s.fo.add(r.t.Sub(tk))
	} else {
		s.fails = append(s.fails, ferr.Error())
	}
	h, _ := s.bed.Holders(vipAddr)
	h = slices.DeleteFunc(h, func(n string) bool { return n == owner }) // its stale copy, removed below
	fmt.Printf("  %-16s killed the agent on %s and cut its link: first reply from another host after %s (new owner %v) [load %s]\n",
		s.label, owner, ms(r.t.Sub(tk)), h, loadAvg())
	s.owners = append(s.owners, owner)
	chaos.IP("-n", s.bed.NS[owner], "addr", "del", vipAddr+"/"+vipPrefix, "dev", chaos.Dev)
	if err := s.bed.Restore(owner); err != nil {
		return err
	}
	if err := s.a.restart(owner); err != nil {
		return err
	}
	_, err = s.waitStable(120 * time.Second)
	return err
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// pss is the proportional set size of pid in kB (0 when unknown).
func pss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pss:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// sbsIdle samples every process of every node of every system over the
// window (the clients paused): CPU user+sys of each process and of its
// reaped children (a resource agent's monitor runs as a child), RSS and
// PSS summed per node.
func sbsIdle(systems []*sbsSystem, window time.Duration) {
	for _, s := range systems {
		s.ping.paused.Store(true)
	}
	defer func() {
		for _, s := range systems {
			s.ping.paused.Store(false)
		}
	}()
	time.Sleep(5 * time.Second)
	fmt.Printf("\nidle window %s, every system running, the clients paused; load before: %s\n", window, loadNow())
	type key struct {
		s    *sbsSystem
		node string
	}
	before := map[key]map[int]procSample{}
	for _, s := range systems {
		for _, n := range sbsNodes {
			m := map[int]procSample{}
			for _, pid := range s.bed.Pids(n) {
				if ps, err := readProc(pid); err == nil {
					m[pid] = ps
				}
			}
			before[key{s, n}] = m
		}
	}
	t0 := time.Now()
	time.Sleep(window)
	el := time.Since(t0).Seconds()
	for _, s := range systems {
		for _, n := range sbsNodes {
			var cpu float64
			var rss, ps int
			for _, pid := range s.bed.Pids(n) {
				now, err := readProc(pid)
				if err != nil {
					continue
				}
				rss += now.rss
				ps += pss(pid)
				if b, ok := before[key{s, n}][pid]; ok {
					self, kids := cpuPct(b, now, el)
					cpu += self + kids
				}
			}
			s.cpu.add(cpu)
			s.rss.add(float64(rss) / 1024)
			s.pss.add(float64(ps) / 1024)
		}
	}
	fmt.Printf("load after: %s (CPU: the run time of each process's threads, exact, plus its reaped children's clock ticks, one tick over the window being %.4f%%)\n", loadNow(), 100/clkTck/el)
}

func sideBySide(kinds []string, crashes int, window, period time.Duration) error {
	fmt.Printf("\n## sidebyside: %s; 3 nodes each in network namespaces on a bridge of its own, a client namespace pinging the VIP %s every %s\n", strings.Join(kinds, ", "), vipAddr, period)
	fmt.Println("detection settings: keepalived advert_int 1 (master down after 3 adverts + skew; keepalived@A: advert_int A, VRRPv3 under a second); corosync token 3000 (consensus 3600, its default); Haven hb.timeout 3s, hb.interval 1s (haven-R@T: hb.timeout T, hb.interval T/3; haven-R+fastack: node.ready_fast_ack = true on every node, the start may come before ready_period ends; haven-fast: " + fastProfile + ").")
	fmt.Printf("load at the start: %s\n", loadNow())
	var systems []*sbsSystem
	var failed []*sbsSystem
	for _, k := range kinds {
		t0 := time.Now()
		s, err := newSystem(k, period)
		if err != nil {
			s.why = err.Error()
			failed = append(failed, s)
			fmt.Printf("%s: cannot run here: %v\n", k, err)
			continue
		}
		fmt.Printf("%s: started, VIP stable in %s\n", k, time.Since(t0).Round(time.Millisecond))
		systems = append(systems, s)
	}
	if len(systems) == 0 {
		return fmt.Errorf("no system could run")
	}
	sbsIdle(systems, window)
	for r := range crashes {
		fmt.Printf("\nround %d, load %s\n", r+1, loadAvg())
		// each round starts with another system
		for i := range systems {
			s := systems[(r+i)%len(systems)]
			if s.why != "" {
				continue
			}
			if err := s.crash(); err != nil {
				s.why = fmt.Sprintf("crash %d: %v", r+1, err)
				fmt.Printf("  %s: stopped measuring: %s\n", s.label, s.why)
			}
			time.Sleep(2 * time.Second)
		}
	}
	fmt.Printf("\nload at the end: %s\n\n", loadNow())
	fmt.Printf("%-16s %-34s %-22s %-14s %-14s\n", "system", "VIP failover: median [min, max] (n)", "idle CPU %/node", "RSS MB/node", "PSS MB/node")
	for _, s := range systems {
		fmt.Printf("%-16s %-34s %-22s %-14s %-14s\n", s.label,
			fmt.Sprintf("%s [%s, %s] (%d)", sec(s.fo.pct(50)), sec(s.fo.min()), sec(s.fo.max()), len(s.fo.xs)),
			s.cpu.short(3), s.rss.short(1), s.pss.short(1))
		for _, f := range s.fails {
			fmt.Printf("  %s: %s\n", s.label, f)
		}
		if s.why != "" {
			fmt.Printf("  %s: %s\n", s.label, s.why)
		}
		fmt.Printf("RESULT sidebyside system=%s failover_p50=%s failover_min=%s failover_max=%s n=%d cpu_pct_mean=%.3f rss_mb_mean=%.1f pss_mb_mean=%.1f owners=%s\n",
			s.label, sec(s.fo.pct(50)), sec(s.fo.min()), sec(s.fo.max()), len(s.fo.xs), s.cpu.mean(), s.rss.mean(), s.pss.mean(), strings.Join(s.owners, ","))
	}
	for _, s := range failed {
		fmt.Printf("%-16s could not run: %s\n", s.label, s.why)
	}
	fmt.Println("\nratios Haven/peer (failover medians, idle CPU and RSS means per node):")
	for _, h := range systems {
		if !strings.HasPrefix(h.label, "haven") || len(h.fo.xs) == 0 {
			continue
		}
		for _, p := range systems {
			if strings.HasPrefix(p.label, "haven") || len(p.fo.xs) == 0 {
				continue
			}
			cpu := "n/a (the peer used less than one clock tick per node)"
			if p.cpu.mean() > 0 {
				cpu = fmt.Sprintf("%.1fx", h.cpu.mean()/p.cpu.mean())
			}
			fmt.Printf("  %s / %s: failover %.2fx, idle CPU %s, RSS %.2fx, PSS %.2fx\n", h.label, p.label,
				float64(h.fo.pct(50))/float64(p.fo.pct(50)), cpu, h.rss.mean()/p.rss.mean(), h.pss.mean()/p.pss.mean())
		}
	}
	return nil
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

func (s *spread) mean() float64 {
	if len(s.xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range s.xs {
		t += x
	}
	return t / float64(len(s.xs))
}

// short is "mean (min-max)".
func (s *spread) short(prec int) string {
	if len(s.xs) == 0 {
		return "-"
	}
	xs := slices.Sorted(slices.Values(s.xs))
	return fmt.Sprintf("%.*f (%.*f-%.*f)", prec, s.mean(), prec, xs[0], prec, xs[len(xs)-1])
}
