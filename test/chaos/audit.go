package chaos

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// Bounds of the audits.
const (
	recoveryBound = 45 * time.Second // every ha service up once after the last fault
	configBound   = 20 * time.Second // every node holds the same configs
	rssBoundKiB   = 200 << 10        // a daemon's resident set
	ledgerBound   = 10 * time.Second // every view shows the acknowledged changes
)

// Ledger is what acknowledged admin changes put in force: the audits check
// every node's view against it.
type Ledger struct {
	NodeFrozen map[string]bool // node -> frozen by an acknowledged freeze or drain
	SvcFrozen  map[string]bool // service -> frozen by an acknowledged freeze
	// SvcUnsure: the last freeze or thaw of the service answered exit 1
	// "reached on the known nodes only" (a node was unknown): it is in force
	// on the known nodes and maybe not on the others, so no frozen flag is
	// promised until the next acknowledged one.
	SvcUnsure map[string]bool
}

func newLedger() Ledger {
	return Ledger{NodeFrozen: map[string]bool{}, SvcFrozen: map[string]bool{}, SvcUnsure: map[string]bool{}}
}

// stable checks that every node's daemon runs and sees every other up and
// idle, and that every failover service is up on exactly one node and
// every flex service on as many as it may (stableFlex), the same in every
// view and in the journal. It returns where each service runs (a flex
// service's nodes joined by "+"), or why the cluster is not stable.
func (c *Cluster) stable() (map[string]string, error) {
	where := map[string]string{}
	for _, n := range c.Names {
		st, err := c.Nodes[n].Status()
		if err != nil {
			return nil, err
		}
		for _, o := range c.Names {
			ns := st.Nodes[o]
			if ns.Status != dataset.NodeUp || ns.Monitor != dataset.NodeIdle {
				return nil, fmt.Errorf("%s sees %s %s/%s", n, o, ns.Status, ns.Monitor)
			}
		}
		if c.cfg.OneVote && c.quorum {
			// a one-vote arbitrator counts only while its lease runs: a
			// fault before every node holds one (its start-up wait, a node
			// just thawed) is not the fault the test means
			if qs := st.Cluster.QuorumState; qs == nil || len(qs.Arbitrators) == 0 || !qs.Arbitrators[0].Answered {
				return nil, fmt.Errorf("%s holds no lease of the one-vote arbitrator yet", n)
			}
		}
		for _, s := range c.Services {
			var up []string
			for node, i := range st.Services[s.Name].Instances {
				if i.Avail == dataset.StatusUp {
					up = append(up, node)
				}
				if m := i.Monitor.State; m != dataset.Idle {
					return nil, fmt.Errorf("%s sees %s on %s %s", n, s.Name, node, m)
				}
				// a view that does not know an instance is not settled:
				// a restarted node's new run is held a while (2/3
				// hb.timeout: it could be a clone) and an admin action
				// then is rightly answered "reached on the known nodes
				// only"
				if i.Stale || i.Avail == dataset.StatusUnknown || i.Avail == "" {
					return nil, fmt.Errorf("%s does not know the instance of %s on %s yet", n, s.Name, node)
				}
			}
			slices.Sort(up)
			if len(up) != 1 {
				return nil, fmt.Errorf("%s sees %s up on %v", n, s.Name, up)
			}
			if w, ok := where[s.Name]; ok && w != up[0] {
				return nil, fmt.Errorf("%s sees %s up on %s, another view on %s", n, s.Name, up[0], w)
			}
			where[s.Name] = up[0]
		}
		for _, s := range c.Flex {
			up, err := c.stableFlex(n, &st, s)
			if err != nil {
				return nil, err
			}
			if w, ok := where[s.Name]; ok && w != up {
				return nil, fmt.Errorf("%s sees %s up on %s, another view on %s", n, s.Name, up, w)
			}
			where[s.Name] = up
		}
	}
	ev, err := ReadJournal(c.Journal)
	if err != nil {
		return nil, err
	}
	up := UpAt(ev)
	for _, s := range c.all() {
		if !slices.Equal(up[s.Name], flexNodes(where[s.Name])) {
			return nil, fmt.Errorf("the journal has %s up on %v, the daemons on %s", s.Name, up[s.Name], where[s.Name])
		}
	}
	return where, nil
}

// stableFlex checks view st (node n's) of a flex service: every instance
// known and idle, and as many up as its target allows: flex_target, or
// fewer when fewer nodes may host one (a frozen node starts nothing, and
// keeps what it runs). It returns the nodes up, joined by "+".
func (c *Cluster) stableFlex(n string, st *dataset.ClusterStatus, s Service) (string, error) {
	var up []string
	hosts := 0
	for _, o := range s.Nodes {
		i, ok := st.Services[s.Name].Instances[o]
		if !ok {
			return "", fmt.Errorf("%s does not know the instance of %s on %s yet", n, s.Name, o)
		}
		if m := i.Monitor.State; m != dataset.Idle {
			return "", fmt.Errorf("%s sees %s on %s %s", n, s.Name, o, m)
		}
		if i.Stale || i.Avail == dataset.StatusUnknown || i.Avail == "" {
			return "", fmt.Errorf("%s does not know the instance of %s on %s yet", n, s.Name, o)
		}
		if i.Avail == dataset.StatusUp {
			up = append(up, o)
		}
		if i.Avail == dataset.StatusUp || !st.Nodes[o].Frozen {
			hosts++
		}
	}
	if want := min(s.Flex, hosts); len(up) != want {
		return "", fmt.Errorf("%s sees %s up on %v, want %d of them (flex_target %d, %d nodes may host one)", n, s.Name, up, want, s.Flex, hosts)
	}
	return strings.Join(up, "+"), nil
}

// flexNodes are the nodes of a where entry: one for a failover service,
// those joined by "+" for a flex service.
func flexNodes(w string) []string {
	if w == "" {
		return nil
	}
	return strings.Split(w, "+")
}

// waitStable polls stable until it holds or d passes.
func (c *Cluster) waitStable(d time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(d)
	for {
		w, err := c.stable()
		if err == nil {
			return w, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not stable after %s: %w", d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sameConfigs reports the first service config that differs between nodes.
func (c *Cluster) sameConfigs() error {
	ref := c.Nodes[c.Names[0]]
	files, _ := filepath.Glob(filepath.Join(ref.Root, "etc", "services", "*.toml"))
	if len(files) != len(c.all()) {
		return fmt.Errorf("%s holds %d service configs, want %d", ref.Name, len(files), len(c.all()))
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, n := range c.Names[1:] {
			p := filepath.Join(c.Nodes[n].Root, "etc", "services", filepath.Base(f))
			got, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			if !bytes.Equal(got, want) {
				return fmt.Errorf("%s differs between %s and %s", filepath.Base(f), ref.Name, n)
			}
		}
	}
	return nil
}

// checkLedger compares every node's view with the acknowledged changes.
func (c *Cluster) checkLedger(l Ledger) error {
	for _, n := range c.Names {
		st, err := c.Nodes[n].Status()
		if err != nil {
			return err
		}
		for _, o := range c.Names {
			if got := st.Nodes[o].Frozen; got != l.NodeFrozen[o] {
				return fmt.Errorf("%s sees node %s frozen=%v, the acknowledged admin changes say %v", n, o, got, l.NodeFrozen[o])
			}
		}
		for _, s := range c.Services {
			if l.SvcUnsure[s.Name] {
				continue
			}
			for node, i := range st.Services[s.Name].Instances {
				if i.Frozen != l.SvcFrozen[s.Name] {
					return fmt.Errorf("%s sees the instance of %s on %s frozen=%v, the acknowledged admin changes say %v", n, s.Name, node, i.Frozen, l.SvcFrozen[s.Name])
				}
			}
		}
	}
	return nil
}

// badLogLines returns the lines appended to the daemons' logs since the
// last call that contain panic or fatal (case-insensitive).
func (c *Cluster) badLogLines() []string {
	bad, sizes := c.logLinesSince(c.logSeen, func(l string) bool {
		low := strings.ToLower(l)
		return strings.Contains(low, "panic") || strings.Contains(low, "fatal")
	})
	c.logSeen = sizes
	for i, l := range bad {
		if len(l) > 300 {
			bad[i] = l[:300] + "..."
		}
	}
	return bad
}

// logSizes are the sizes of the daemons' logs now (see newLogLines).
func (c *Cluster) logSizes() map[string]int64 {
	_, sizes := c.logLinesSince(nil, func(string) bool { return false })
	return sizes
}

// newLogLines returns the lines containing substr written to the daemons'
// logs since the sizes in from.
func (c *Cluster) newLogLines(from map[string]int64, substr string) []string {
	lines, _ := c.logLinesSince(from, func(l string) bool { return strings.Contains(l, substr) })
	return lines
}

// logLinesSince returns the lines that match, written to the daemons' logs
// after the sizes in from (a log shorter than its size was rotated: read
// from its start), as "NODE: FILE: LINE", and the sizes now.
func (c *Cluster) logLinesSince(from map[string]int64, match func(string) bool) ([]string, map[string]int64) {
	var out []string
	sizes := map[string]int64{}
	for _, n := range c.Names {
		for _, p := range c.Nodes[n].logs() {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			seen := from[p]
			if int64(len(b)) < seen {
				seen = 0
			}
			for _, l := range strings.Split(string(b[seen:]), "\n") {
				if match(l) {
					out = append(out, n+": "+filepath.Base(p)+": "+l)
				}
			}
			sizes[p] = int64(len(b))
		}
	}
	return out, sizes
}

// appProcs lists the live app processes of svc (pid -> node) in every
// node's namespace, and those outside of any.
func (c *Cluster) appProcs(svc string) map[int]string {
	out := map[int]string{}
	app := c.App(svc)
	inNS := map[int]bool{}
	for _, n := range c.Names {
		for _, pid := range c.Bed.Pids(n) {
			inNS[pid] = true
			if isApp(pid, app) {
				out[pid] = n
			}
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && !inNS[pid] && isApp(pid, app) {
			out[pid] = "(no node)"
		}
	}
	return out
}

func isApp(pid int, app string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.HasPrefix(string(b), app+"\x00") && alive(pid)
}

// leaks lists the app processes that no up instance accounts for: one per
// service and node where it is up, whose pid is in its pid file.
func (c *Cluster) leaks(where map[string]string) []string {
	var bad []string
	for _, s := range c.all() {
		for pid, n := range c.appProcs(s.Name) {
			if !slices.Contains(flexNodes(where[s.Name]), n) {
				bad = append(bad, fmt.Sprintf("%s: process %d on %s, the service is up on %s", s.Name, pid, n, where[s.Name]))
				continue
			}
			if rec := testbed.ReadPID(filepath.Join(c.Nodes[n].Var(), "services", s.Name, "main.pid")); rec != pid {
				bad = append(bad, fmt.Sprintf("%s: process %d on %s, its pid file says %d", s.Name, pid, n, rec))
			}
		}
	}
	return bad
}

// AuditResult is what the audits after one test found.
type AuditResult struct {
	Recovery time.Duration // from the test's last fault to a stable cluster
	Where    map[string]string
	Failures []string // broken promises
	Findings []string // reported, not failed (e.g. overlaps without quorum where no promise holds)
	MaxRSS   int      // KiB
}

// Audit runs every audit after a test whose last fault was at lastFault.
// Overlaps opened after journal line fromLine fail the test when promised.
func (c *Cluster) Audit(lastFault time.Time, fromLine int, promised bool, l Ledger) AuditResult {
	var r AuditResult
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	where, err := c.waitStable(recoveryBound)
	if err != nil {
		fail("recovery: %v", err)
	} else {
		r.Recovery = time.Since(lastFault)
		r.Where = where
	}
	if ev, err := ReadJournal(c.Journal); err != nil {
		fail("journal: %v", err)
	} else {
		for _, o := range Excess(ev, c.limits()) {
			if o.Line <= fromLine {
				continue
			}
			if promised {
				fail("never twice: %s", o)
			} else {
				r.Findings = append(r.Findings, fmt.Sprintf("never twice (cluster.quorum = false, no promise here): %s", o))
			}
		}
	}
	if err := waitUntil(configBound, func() bool { return c.sameConfigs() == nil }, "configs"); err != nil {
		fail("configs: %v", c.sameConfigs())
	}
	// the views may lag the acknowledgement by a heartbeat or two
	if waitUntil(ledgerBound, func() bool { return c.checkLedger(l) == nil }, "") != nil {
		fail("acknowledged changes (%s after the recovery): %v", ledgerBound, c.checkLedger(l))
	}
	for _, b := range c.badLogLines() {
		fail("log: %s", b)
	}
	// split_action stop ends before its deadline, and no service asks
	// for a node action: crash_command and reboot_command never run
	for _, a := range c.fencedCrashes(c.nodeActions()) {
		fail("node action ran (crash_command or reboot_command): %s", a)
	}
	if where != nil {
		for _, b := range c.leaks(where) {
			fail("leaked process: %s", b)
		}
	}
	for _, n := range c.Names {
		rss := c.Nodes[n].RSS()
		r.MaxRSS = max(r.MaxRSS, rss)
		if rss > rssBoundKiB {
			fail("rss: the daemon of %s holds %d MiB, over %d MiB", n, rss>>10, rssBoundKiB>>10)
		}
	}
	return r
}

// journalLines is the number of lines in the journal now.
func (c *Cluster) journalLines() int {
	ev, _ := ReadJournal(c.Journal)
	if len(ev) == 0 {
		return 0
	}
	return ev[len(ev)-1].Line
}
