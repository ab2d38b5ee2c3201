package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"haven/test/testbed"
)

// ---------------------------------------------------------------------------
// flex-scale: n daemons, each in its own network namespace on one bridge,
// nsvc services of which every other one is flex (flex_target target) and
// the rest failover, each of one app (a sleep, checked every
// check_interval): the time to converge (every failover service up on one
// node, every flex one on target), the idle CPU per daemon, then a node
// lost (its daemon and its apps killed -9): the time from the kill to each
// affected service's replacement up on another node (its first
// `instance_status ... -> up` there), against hb.timeout + ready_period +
// 1 s, and that nothing then runs on more nodes than it may.

// flexScaleService is service i of the run: flex with target on every
// even i, failover otherwise; each lists the nodes rotated by i, so that
// the failover services' first choices and the flex ones' spread over the
// cluster.
func flexScaleService(i int, names []string, target int) string {
	k := i % len(names)
	rot := append(slices.Clone(names[k:]), names[:k]...)
	extra := ""
	if i%2 == 0 {
		extra = fmt.Sprintf("topology = \"flex\"\nflex_target = %d\n", target)
	}
	svc := testbed.HAService(testbed.NodeList(rot), extra)
	return strings.Replace(svc, "monitor = true", "monitor = false", 1)
}

// flexWhere is where n1 sees each service up, and whether every one is
// placed: a failover service on one node, a flex one on target.
func flexWhere(c *cluster, nsvc, target int) (map[string][]string, bool) {
	w, err := where(c.nodes[0])
	if err != nil || len(w) != nsvc {
		return w, false
	}
	for s, nodes := range w {
		if len(nodes) != flexWant(s, target) {
			return w, false
		}
	}
	return w, true
}

// flexWant is how many nodes svc runs on: target for a flex one, else 1.
func flexWant(svc string, target int) int {
	if isFlex(svc) {
		return target
	}
	return 1
}

// noteUp applies an instance_status event of node's instance of svc
// ("avail FROM -> TO") to upOn.
func noteUp(upOn map[string]map[string]bool, svc, node, msg string) {
	from, to, ok := strings.Cut(strings.TrimPrefix(msg, "avail "), " -> ")
	if !ok {
		return
	}
	if upOn[svc] == nil {
		upOn[svc] = map[string]bool{}
	}
	switch {
	case to == "up":
		upOn[svc][node] = true
	case from == "up":
		delete(upOn[svc], node)
	}
}

func flexName(i int) string { return fmt.Sprintf("s%03d", i) }
func isFlex(svc string) bool {
	var i int
	fmt.Sscanf(svc, "s%d", &i)
	return i%2 == 0
}

func flexScale(n, nsvc, target, kills int, o opts, settle, window time.Duration, pprofOut, heapOut string) error {
	budget := o.timeout + o.ready + time.Second
	fmt.Printf("\n## flex-scale: %d daemons in network namespaces, %d services (%d flex, flex_target %d; %d failover), an app of a sleep each (checked every check_interval), hb.timeout %s, hb.interval %s, ready_period %s, fast ack %v; bound for the last replacement: hb.timeout + ready_period + 1s = %s\n",
		n, nsvc, (nsvc+1)/2, target, nsvc/2, o.timeout, o.interval, o.ready, o.fastAck, budget)
	fmt.Printf("load at the start: %s\n", loadNow())
	c, _, nm, err := newNetnsCluster(n, o)
	if err != nil {
		return err
	}
	defer c.close()
	// on n1's disk before the first start, as netns-scale does (500
	// creates through the API cost every node O(services) each)
	for i := range nsvc {
		if err := testbed.WriteFile(filepath.Join(c.nodes[0].root, "etc", "services", flexName(i)+".toml"), flexScaleService(i, nm, target), 0o644); err != nil {
			return err
		}
	}
	c.nodes[0].newState = true
	t0 := time.Now()
	if pprofOut != "" || heapOut != "" {
		// every daemon, each on the loopback of its own namespace
		os.Setenv("HAVEN_PPROF_ADDR", pprofInNS)
	}
	for _, b := range c.nodes {
		if err := b.start(); err != nil {
			return err
		}
	}
	if err := c.waitPeersUp(300*time.Second, c.nodes); err != nil {
		return err
	}
	fmt.Printf("%d daemons up and joined in %s\n", n, time.Since(t0).Round(time.Millisecond))
	var w map[string][]string
	if err := testbed.WaitFor(900*time.Second, 2*time.Second, "every service placed (failover on 1 node, flex on its target)", func() bool {
		var ok bool
		w, ok = flexWhere(c, nsvc, target)
		return ok
	}); err != nil {
		up := 0
		for _, nodes := range w {
			up += len(nodes)
		}
		return fmt.Errorf("%w: %d instances up of %d", err, up, nsvc/2+(nsvc+1)/2*target)
	}
	fmt.Printf("converged: every service placed %s after the start; load %s\n", time.Since(t0).Round(time.Millisecond), loadAvg())
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
	ch, subs, sub := subscribeAll(c, 1<<20)
	defer subs.cancel()
	var lastAll stats
	over, doubles := 0, 0
	for r := range kills {
		w, ok := flexWhere(c, nsvc, target)
		if !ok {
			if err := testbed.WaitFor(300*time.Second, 2*time.Second, "every service placed again", func() bool {
				w, ok = flexWhere(c, nsvc, target)
				return ok
			}); err != nil {
				return err
			}
		}
		// the victim: the node with the most instances
		count := map[string]int{}
		for _, nodes := range w {
			for _, x := range nodes {
				count[x]++
			}
		}
		victim := nm[len(nm)-1]
		for _, x := range nm {
			if count[x] > count[victim] {
				victim = x
			}
		}
		affected := map[string]bool{}
		for s, nodes := range w {
			if slices.Contains(nodes, victim) {
				affected[s] = true
			}
		}
		time.Sleep(time.Second)
		drain(ch)
		// the survivors' CPU over the kill: each daemon's own, and that
		// of the processes it waited for (its starts and checks)
		cpu0 := map[string]procSample{}
		for _, b := range c.nodes {
			if b.name != victim {
				if ps, err := readProc(testbed.DaemonPID(b.root)); err == nil {
					cpu0[b.name] = ps
				}
			}
		}
		var prof chan error
		profOut := ""
		if pprofOut != "" {
			// a survivor's CPU profile over the kill: n1's, or n2's
			// when n1 is the victim
			sv := c.nodes[0]
			if sv.name == victim {
				sv = c.nodes[1]
			}
			profOut = fmt.Sprintf("%s-%d-%s", pprofOut, r+1, sv.name)
			prof = make(chan error, 1)
			secs := int((budget + 10*time.Second).Seconds())
			go func() {
				prof <- fetchInNS(sv.ns, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofInNS, secs), profOut)
			}()
			time.Sleep(200 * time.Millisecond)
		}
		subs[victim]()
		tk, err := c.by[victim].crash()
		if err != nil {
			return err
		}
		up, begin, end := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
		var down time.Time
		// every instance up, from the placement before the kill and the
		// survivors' instance_status events after it (the victim's
		// instances died with it): a service up on more nodes than it
		// may at any instant of the window, not only at its end (the
		// daemons' own reports: the safety claims are the chaos suite's
		// and the e2e tests', observed outside the cluster)
		upOn := map[string]map[string]bool{}
		for s, nodes := range w {
			upOn[s] = map[string]bool{}
			for _, x := range nodes {
				if x != victim {
					upOn[s][x] = true
				}
			}
		}
		overlapped := map[string]string{}
		deadline := time.After(budget + 120*time.Second)
	collect:
		for len(up) < len(affected) {
			select {
			case e := <-ch:
				if e.from == victim {
					continue
				}
				if e.Kind == "instance_status" && e.Service != "" {
					noteUp(upOn, e.Service, e.from, e.Message)
					if want := flexWant(e.Service, target); len(upOn[e.Service]) > want {
						if _, seen := overlapped[e.Service]; !seen {
							overlapped[e.Service] = fmt.Sprintf("%s up on %v at +%s", e.Service, slices.Sorted(maps.Keys(upOn[e.Service])), ms(e.Time.Sub(tk)))
						}
					}
				}
				switch {
				case e.Kind == "peer_down" && e.Fields["node"] == victim && down.IsZero():
					down = e.Time
				case e.Kind == "action_begin" && strings.HasPrefix(e.Message, "start") && affected[e.Service] && e.Time.After(tk):
					if _, ok := begin[e.Service]; !ok {
						begin[e.Service] = e.Time
					}
				case e.Kind == "action_end" && e.Fields["action"] == "start" && affected[e.Service] && e.Time.After(tk):
					if _, ok := end[e.Service]; !ok {
						end[e.Service] = e.Time
					}
				case e.Kind == "instance_status" && strings.HasSuffix(e.Message, "-> up") && affected[e.Service] && e.Time.After(tk):
					if _, ok := up[e.Service]; !ok {
						up[e.Service] = e.Time
					}
				}
			case <-deadline:
				break collect
			}
		}
		el := time.Since(tk).Seconds()
		var self, kids, selfMax float64
		for name, a := range cpu0 {
			if b, err := readProc(testbed.DaemonPID(c.by[name].root)); err == nil {
				x := float64(b.self-a.self) / clkTck
				self += x
				selfMax = max(selfMax, x)
				kids += float64(b.children-a.children) / clkTck
			}
		}
		var each, toBegin, toUp, cmds, confirm stats
		for svc, t := range up {
			each.add(t.Sub(tk))
			if b, ok := begin[svc]; ok {
				toBegin.add(b.Sub(tk))
				toUp.add(t.Sub(b))
				if x, ok := end[svc]; ok && !x.Before(b) {
					cmds.add(x.Sub(b))
					confirm.add(t.Sub(x))
				}
			}
		}
		late := 0
		for _, d := range each.xs {
			if d > budget {
				late++
			}
		}
		over += late
		lastAll.add(each.max())
		fmt.Printf("kill %d: %s (%d instances: %d services affected) killed; first peer_down %s after; replaced %d/%d: first %s, p50 %s, p99 %s, last %s after the kill; %d beyond %s; load %s\n",
			r+1, victim, count[victim], len(affected), ms(down.Sub(tk)), len(up), len(affected), ms(each.min()), ms(each.pct(50)), ms(each.pct(99)), ms(each.max()), late, budget, loadAvg())
		// where the time went: the decision to start (kill -> the first
		// action_begin start of the service elsewhere) and the start with
		// its check (action_begin -> up)
		fmt.Printf("  kill -> start begun: p50 %s, last %s; start begun -> up: p50 %s, max %s\n",
			ms(toBegin.pct(50)), ms(toBegin.max()), ms(toUp.pct(50)), ms(toUp.max()))
		fmt.Printf("  of which start begun -> action_end (its commands): p50 %s, max %s; action_end -> up (the check that ends it): p50 %s, max %s\n",
			ms(cmds.pct(50)), ms(cmds.max()), ms(confirm.pct(50)), ms(confirm.max()))
		fmt.Printf("  the %d survivors over the %.1f s from the kill to the last up: daemons %.1f CPU s (the busiest %.1f), the processes they waited for %.1f CPU s; the host had %.1f CPU s\n",
			len(cpu0), el, self, selfMax, kids, el*float64(numCPU()))
		if prof != nil {
			if err := <-prof; err != nil {
				fmt.Printf("  CPU profile: %v\n", err)
			} else {
				fmt.Printf("  CPU profile of a survivor over the kill in %s\n", profOut)
			}
		}
		if len(overlapped) > 0 {
			doubles += len(overlapped)
			first := slices.Sorted(maps.Values(overlapped))
			fmt.Printf("  WARNING: %d services up on more nodes than they may during the window (the daemons' events), e.g. %s\n", len(overlapped), strings.Join(first[:min(len(first), 3)], "; "))
		}
		if len(up) < len(affected) {
			var miss []string
			for s := range affected {
				if _, ok := up[s]; !ok {
					miss = append(miss, s)
				}
			}
			slices.Sort(miss)
			fmt.Printf("  not replaced within %s: %s\n", budget+120*time.Second, strings.Join(miss[:min(len(miss), 20)], " "))
		}
		if err := c.by[victim].start(); err != nil {
			return err
		}
		sub(c.by[victim])
		if err := c.waitPeersUp(300*time.Second, c.nodes); err != nil {
			return err
		}
		time.Sleep(3 * time.Second)
		if w, err := where(c.nodes[0]); err == nil {
			for s, nodes := range w {
				if want := flexWant(s, target); len(nodes) > want {
					doubles++
					fmt.Printf("  WARNING: %s up on %v (at most %d) after %s came back\n", s, nodes, want, victim)
				}
			}
		}
	}
	fmt.Printf("RESULT flex-scale n=%d services=%d target=%d last_replaced_max=%s budget=%s beyond_budget=%d doubles=%d\n",
		n, nsvc, target, ms(lastAll.max()), budget, over, doubles)
	fmt.Printf("load at the end: %s\n", loadNow())
	return nil
}
