package chaos

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config of a chaos round.
type Config struct {
	Bin      string // directory of nodemgr, haven-guard, svcmgr, svcmon
	Nodes    int    // cluster size (3)
	Services int    // failover test services (2)
	// NoFlex leaves out the flex test service (Cluster.Flex) that every
	// round runs otherwise
	NoFlex   bool
	Seed     uint64        // picks the tests and their choices
	Duration time.Duration // tests start until then
	Tests    []string      // replay this sequence instead of picking at random
	Only     []string      // pick only among these tests
	Work     string        // parent of the work directory ("" for the system's temp dir)
	Keep     bool          // keep the work directory (roots, logs, journal)
	Out      io.Writer     // one line per test, then the table
	// Previous is the directory of the previous release's binaries
	// (testbed.PreviousRelease): the round's last node runs them, and
	// MixedVersions may be picked (mixed.go). "" runs every node on Bin.
	Previous string
	// StopOnFailure ends the round at the first failed test; otherwise it
	// goes on while the audits find the cluster recovered.
	StopOnFailure bool
	// Quorum is the round's quorum mode: QuorumMixed ("" too), QuorumOn
	// or QuorumOff (quorummode.go). With quorum on never twice is promised
	// by every test.
	Quorum string
	// Links is the number of network links per node: 1 (0 too) or 2
	// (links.go).
	Links int
	// OneVote makes the arbitrator Haven's one-vote arbitrator (nodemgr
	// arbitrator, haven://) instead of the plain HTTP one: with 2 nodes,
	// the split tests then fail over without a fence command.
	OneVote bool
	// OCF makes the test services of OCF agents (chaos/ocf.go): the app
	// behind ocf:chaos:app, with ocf:heartbeat:Dummy beside it.
	OCF bool
	// Podman gives each node a podman store of its own (testbed.Podman,
	// node.toml container_env) holding the image localhost/hbox:1, built
	// offline from busybox-static: for the container examples of the bed.
	Podman bool
	// Disk makes it a disk-fence round (diskmode.go): [hb.disk] with
	// fence = true on every node, quorum on, DiskFence drawn too.
	Disk bool
	// First are run first, in order (entries as in Tests: Name or
	// Name/q), then the tests picked at random.
	First []string
	// HB, when set, replaces the cluster's heartbeat and ready timings
	// with a profile of its own (FalseAlarm's, bench/falsealarm.sh). The
	// tests' bounds count on the suite's timings: a round refuses it.
	HB *HBProfile
	// Stop, when closed, ends the round after the test running (the report
	// says it was interrupted). Abort, when closed, removes the cluster at
	// once (daemons stopped, namespaces deleted, the work directory kept
	// for the post-mortem), then calls Aborted, which must not return (the
	// command exits there): the test running meanwhile is abandoned.
	Stop    <-chan struct{}
	Abort   <-chan struct{}
	Aborted func()
}

// ConfigError is a round asked for what cannot run (an unknown test, a
// mode that refuses it): the command's usage error.
type ConfigError string

func (e ConfigError) Error() string { return string(e) }

// T is the context of one test: the cluster, the test's random source,
// what it did, and the acknowledged admin changes.
type T struct {
	C         *Cluster
	Rand      *rand.Rand
	lastFault time.Time
	ledger    *Ledger
	notes     []string
	findings  []string
	promised  bool // overlaps fail the test (unset by tests without that promise)
	// logs are the sizes of the daemons' logs when the test began
	logs map[string]int64
	// mu guards notes, findings and lastFault: a test may record from
	// several goroutines (AdminUnderChurn's two admins)
	mu sync.Mutex
}

// Fault records a fault and when it was injected.
func (t *T) Fault(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastFault = time.Now()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Note records what the test saw.
func (t *T) Note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

// Finding records something worth reporting that breaks no promise.
func (t *T) Finding(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.findings = append(t.findings, fmt.Sprintf(format, args...))
}

// Outcome is the result of one run of a test with its audits.
type Outcome struct {
	Test     string
	Quorum   bool // cluster.quorum was on
	Pass     bool
	Failures []string
	Findings []string
	Notes    []string
	Recovery time.Duration
	Elapsed  time.Duration
}

// Report is a whole round.
type Report struct {
	Seed     uint64
	Duration time.Duration
	Started  time.Time
	Elapsed  time.Duration
	Sequence []string
	Outcomes []Outcome
	MaxRSS   int // KiB, over every audit
	Setup    time.Duration
	// Interrupted: the round was stopped (Config.Stop) before its end.
	Interrupted bool
}

// Failed reports whether any test failed.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Outcomes, func(o Outcome) bool { return !o.Pass })
}

// Run sets up the cluster, then runs tests (picked at random with the seed,
// or cfg.Tests in order) with the audits after each, until cfg.Duration has
// passed or a test failed. The cluster is removed at the end.
func Run(cfg Config) (*Report, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Services == 0 {
		cfg.Services = 2
	}
	switch cfg.Quorum {
	case "":
		cfg.Quorum = QuorumMixed
	case QuorumMixed, QuorumOn, QuorumOff:
	default:
		return nil, ConfigError(fmt.Sprintf("quorum mode %q: want %s, %s or %s", cfg.Quorum, QuorumMixed, QuorumOn, QuorumOff))
	}
	if cfg.HB != nil {
		return nil, ConfigError("a round runs at the suite's own heartbeat timings (its tests' bounds count on them): Config.HB is for FalseAlarm")
	}
	if err := diskMode(&cfg); err != nil {
		return nil, err
	}
	if why := OCFUnavailable(); cfg.OCF && why != "" {
		return nil, ConfigError(why)
	}
	for _, e := range append(slices.Clone(cfg.Tests), append(cfg.First, cfg.Only...)...) {
		n, _ := parseEntry(e)
		if testByName(n) == nil {
			return nil, ConfigError(fmt.Sprintf("unknown test %q (tests: %s)", n, strings.Join(TestNames(), ", ")))
		}
	}
	if cfg.Links < 1 || cfg.Links > 2 {
		if cfg.Links != 0 {
			return nil, ConfigError(fmt.Sprintf("%d links per node: want 1 or 2", cfg.Links))
		}
		cfg.Links = 1
	}
	for _, e := range append(slices.Clone(cfg.Tests), cfg.First...) {
		n, q := parseEntry(e)
		if why := checkMode(cfg.Quorum, n, q); why != "" {
			return nil, ConfigError(why)
		}
		if why := checkLinks(cfg.Links, n); why != "" {
			return nil, ConfigError(why)
		}
		if why := checkPrevious(cfg.Previous, n); why != "" {
			return nil, ConfigError(why)
		}
		if why := checkDisk(cfg.Disk, n); why != "" {
			return nil, ConfigError(why)
		}
	}
	if why := NetnsUnavailable(); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrNoNamespace, why)
	}
	if why := IptablesUnavailable(); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	started := time.Now()
	// the daemons start in the mode of the first test named, if any
	first := cfg.Quorum == QuorumOn
	if seq := append(slices.Clone(cfg.Tests), cfg.First...); len(seq) > 0 && cfg.Quorum == QuorumMixed {
		_, first = parseEntry(seq[0])
		first = first || quorumUses[seq[0]] == quorumNeed
	}
	c, err := newCluster(cfg, first)
	if err != nil {
		return nil, err
	}
	rep := &Report{Seed: cfg.Seed, Duration: cfg.Duration, Started: started}
	// a failed round keeps its roots, logs and journal for the post-mortem
	defer func() { c.CloseKeep(cfg.Keep || rep.Failed() || rep.Interrupted) }()
	if cfg.Abort != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-cfg.Abort:
				c.CloseKeep(true)
				fmt.Fprintf(cfg.Out, "aborted: daemons stopped, namespaces removed; logs, roots and journal kept in %s\n", c.Work)
				if cfg.Aborted != nil {
					cfg.Aborted()
				}
			case <-done:
			}
		}()
	}
	if cfg.Keep {
		fmt.Fprintf(cfg.Out, "work directory (kept): %s\n", c.Work)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("set-up: %w", err)
	}
	rep.Setup = time.Since(rep.Started)
	flex := ""
	for _, s := range c.Flex {
		flex += fmt.Sprintf(" + flex %s (%d of %d)", s.Name, s.Flex, len(s.Nodes))
	}
	fmt.Fprintf(cfg.Out, "chaos: seed %d, %d nodes, %d link(s) each, %d services%s, quorum %s%s, cluster up in %s\n", cfg.Seed, len(c.Names), cfg.Links, len(c.Services), flex, cfg.Quorum,
		map[bool]string{true: ", fencing disk " + c.DiskPath()}[cfg.Disk], rep.Setup.Round(100*time.Millisecond))
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6861766e))
	ledger := newLedger()
	pool := cfg.Only
	if len(pool) == 0 {
		pool = TestNames()
	}
	if cfg.Quorum == QuorumOff {
		pool = slices.DeleteFunc(slices.Clone(pool), func(n string) bool { return quorumUses[n] == quorumNeed })
	}
	pool = linksPool(cfg.Links, pool)
	pool = diskPool(cfg.Disk, pool)
	pool = slices.DeleteFunc(pool, func(n string) bool { return checkPrevious(cfg.Previous, n) != "" })
	seq := cfg.Tests
	if len(seq) == 0 {
		seq = cfg.First
	}
	end := time.Now().Add(cfg.Duration)
	for i := 0; ; i++ {
		var name string
		var named, q bool
		switch {
		case i < len(seq):
			name, q = parseEntry(seq[i])
			named = true
		case len(cfg.Tests) > 0 || len(pool) == 0:
		case i == 0 || time.Now().Before(end):
			name = pool[rng.IntN(len(pool))]
		}
		if name == "" {
			break
		}
		if stopped(cfg.Stop) {
			rep.Interrupted = true
			fmt.Fprintf(cfg.Out, "interrupted: the round stops after %d tests\n", i)
			break
		}
		// each test draws from its own source, derived from the round's:
		// a replay of the sequence makes the same choices
		t := &T{C: c, Rand: rand.New(rand.NewPCG(rng.Uint64(), uint64(i))), ledger: &ledger, promised: true}
		// a test that draws its mode always draws (first), named or not,
		// so that a replay makes the same choices afterwards
		coin := quorumUses[name] == quorumDraw && t.Rand.IntN(2) == 1
		if named {
			q = q || cfg.Quorum == QuorumOn || quorumUses[name] == quorumNeed
		} else {
			q = wantQuorum(cfg.Quorum, name, c.Quorum(), coin)
		}
		rep.Sequence = append(rep.Sequence, entry(name, q))
		o := runOne(t, testByName(name), c, &ledger, q)
		rep.MaxRSS = max(rep.MaxRSS, o.maxRSS)
		rep.Outcomes = append(rep.Outcomes, o.Outcome)
		status := "pass"
		if !o.Pass {
			status = "FAIL"
		}
		fmt.Fprintf(cfg.Out, "[%3d] %7s %-18s %s  recovery %-6s %s\n", i+1, time.Since(rep.Started).Round(time.Second), entry(name, q), status,
			o.Recovery.Round(100*time.Millisecond), strings.Join(o.Notes, "; "))
		for _, f := range o.Findings {
			fmt.Fprintf(cfg.Out, "        finding: %s\n", f)
		}
		for _, f := range o.Failures {
			fmt.Fprintf(cfg.Out, "        failure: %s\n", f)
		}
		if !o.Pass && (cfg.StopOnFailure || !o.recovered) {
			if !o.recovered {
				fmt.Fprintln(cfg.Out, "        the cluster did not recover: the round stops here")
			}
			break
		}
	}
	rep.Elapsed = time.Since(rep.Started)
	fmt.Fprint(cfg.Out, "\n"+rep.Table())
	if rep.Failed() {
		fmt.Fprintf(cfg.Out, "\nFAILED: seed %d; replay the exact sequence with:\n  %s\n", cfg.Seed, rep.Replay())
	}
	if rep.Failed() || rep.Interrupted {
		fmt.Fprintf(cfg.Out, "logs, roots and journal kept in %s\n", c.Work)
	}
	return rep, nil
}

// stopped reports whether stop is closed (never for nil).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

type result struct {
	Outcome
	maxRSS    int
	recovered bool
}

// runOne runs a test with cluster.quorum = quorum (the daemons restarted
// first if the mode changes), then its audits.
func runOne(t *T, tc *Test, c *Cluster, ledger *Ledger, quorum bool) result {
	if quorum != c.Quorum() {
		t0 := time.Now()
		if err := c.SetQuorum(quorum); err != nil {
			return result{Outcome: Outcome{Test: tc.Name, Quorum: quorum, Failures: []string{fmt.Sprintf("quorum = %v: %v", quorum, err)}}}
		}
		t.Note("quorum switched %s (daemons restarted in %s)", map[bool]string{true: "on", false: "off"}[quorum], time.Since(t0).Round(100*time.Millisecond))
	}
	start := time.Now()
	t.lastFault = start
	t.logs = c.logSizes()
	from := c.journalLines()
	err := tc.Run(t)
	o := result{Outcome: Outcome{Test: tc.Name, Quorum: quorum}}
	if err != nil {
		o.Failures = append(o.Failures, err.Error())
		// leave no fault behind for the audits: they judge the recovery
		c.Bed.Heal()
		for _, n := range c.Nodes {
			if n.DaemonAlive() {
				n.Signal(sigCONT)
			} else {
				n.StartDaemon()
			}
		}
	}
	// with quorum, never twice is promised by every test (docs/behaviour.md 3)
	a := c.Audit(t.lastFault, from, t.promised || c.Quorum(), *ledger)
	o.Failures = append(o.Failures, a.Failures...)
	o.Findings = append(t.findings, a.Findings...)
	o.Notes = t.notes
	o.Recovery = a.Recovery
	o.maxRSS = a.MaxRSS
	o.recovered = a.Where != nil
	o.Pass = len(o.Failures) == 0
	if !o.Pass {
		repair(c, ledger)
	}
	o.Elapsed = time.Since(start)
	return o
}

// repair undoes the admin changes a failed test left in force, so that
// the next test starts from a thawed cluster.
func repair(c *Cluster, l *Ledger) {
	for n, frozen := range l.NodeFrozen {
		if frozen && c.Nodes[n].must(30*time.Second, "nodemgr", "thaw") == nil {
			l.NodeFrozen[n] = false
		}
	}
	for s, frozen := range l.SvcFrozen {
		if frozen && c.Nodes[c.Names[0]].must(50*time.Second, "svcmgr", "-s", s, "thaw", "--wait", "--time", "40s") == nil {
			l.SvcFrozen[s] = false
		}
	}
}

// Replay is the command that runs the same sequence with the same seed.
func (r *Report) Replay() string {
	return fmt.Sprintf("make chaos SEED=%d TESTS=%s", r.Seed, strings.Join(r.Sequence, ","))
}

type row struct {
	runs, passed, quorum int
	worst                time.Duration
}

func (r *Report) rows() ([]string, map[string]*row) {
	rows := map[string]*row{}
	var names []string
	for _, o := range r.Outcomes {
		w := rows[o.Test]
		if w == nil {
			w = &row{}
			rows[o.Test] = w
			names = append(names, o.Test)
		}
		w.runs++
		if o.Quorum {
			w.quorum++
		}
		if o.Pass {
			w.passed++
		}
		w.worst = max(w.worst, o.Recovery)
	}
	slices.Sort(names)
	return names, rows
}

// Table is the final table of the round, in text.
func (r *Report) Table() string {
	var b strings.Builder
	names, rows := r.rows()
	fmt.Fprintf(&b, "%-16s %5s %7s %7s %14s\n", "test", "runs", "passed", "quorum", "worst recovery")
	for _, n := range names {
		w := rows[n]
		fmt.Fprintf(&b, "%-16s %5d %7d %7d %14s\n", n, w.runs, w.passed, w.quorum, w.worst.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "\n%d tests in %s (seed %d), daemon RSS at most %d MiB\n", len(r.Outcomes), r.Elapsed.Round(time.Second), r.Seed, r.MaxRSS>>10)
	if len(Pending) > 0 {
		fmt.Fprintf(&b, "pending (not run, waiting for other work):\n")
		for _, p := range Pending {
			fmt.Fprintf(&b, "  %-16s %s\n", p.Name, p.Waits)
		}
	}
	return b.String()
}

// Markdown is the same report as a markdown document.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos round: seed %d\n\n", r.Seed)
	fmt.Fprintf(&b, "Started %s, ran %s (asked: %s), %d tests, cluster set up in %s. Result: **%s**.\n\n",
		r.Started.Format(time.RFC3339), r.Elapsed.Round(time.Second), r.Duration, len(r.Outcomes), r.Setup.Round(100*time.Millisecond), r.result())
	b.WriteString("| test | runs | passed | with quorum | worst recovery |\n|---|---:|---:|---:|---:|\n")
	names, rows := r.rows()
	for _, n := range names {
		w := rows[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", n, w.runs, w.passed, w.quorum, w.worst.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "\nDaemon RSS at most %d MiB.\n", r.MaxRSS>>10)
	if len(Pending) > 0 {
		b.WriteString("\n## Pending\n\n| test | waits for |\n|---|---|\n")
		for _, p := range Pending {
			fmt.Fprintf(&b, "| %s | %s |\n", p.Name, p.Waits)
		}
	}
	b.WriteString("\n## Sequence\n\n| # | test | result | recovery | what happened |\n|---:|---|---|---:|---|\n")
	for i, o := range r.Outcomes {
		res := "pass"
		if !o.Pass {
			res = "**FAIL**: " + strings.Join(o.Failures, "; ")
		}
		what := strings.Join(o.Notes, "; ")
		if len(o.Findings) > 0 {
			what += "; findings: " + strings.Join(o.Findings, "; ")
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, entry(o.Test, o.Quorum), strings.ReplaceAll(res, "|", "/"), o.Recovery.Round(100*time.Millisecond), strings.ReplaceAll(what, "|", "/"))
	}
	if r.Failed() {
		fmt.Fprintf(&b, "\nReplay: `%s`\n", r.Replay())
	}
	return b.String()
}

// result is the round's verdict in a word.
func (r *Report) result() string {
	switch {
	case r.Failed():
		return "FAILED"
	case r.Interrupted:
		return "interrupted"
	}
	return "passed"
}

// WriteMarkdown writes the markdown report to path.
func (r *Report) WriteMarkdown(path string) error {
	return os.WriteFile(path, []byte(r.Markdown()), 0o644)
}
