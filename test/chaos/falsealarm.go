package chaos

import (
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"haven/dataset"
)

// FalseAlarm watches a started cluster on a busy host and counts what a
// healthy cluster must never do: declare a live member down, move a
// service, run one twice. Nothing is faulted; the host is kept busy by
// CPU hogs (shell loops that never sleep, at the daemons' priority) and
// an I/O hog (files of 64 MiB written and flushed to the disk, over and
// over), beside whatever else the host runs. What counts, from outside
// the cluster: the external journal (every start or stop after the
// cluster settled is a move; an overlap is a second instance), every
// `peer_down` in the daemons' logs, and each node's view (svcmon) polled
// every Poll. bench/falsealarm.sh runs it for 30 minutes at the fast
// failover profile (docs/operations.md, "Fast failover").
type FalseAlarmConfig struct {
	Duration time.Duration
	CPUHogs  int           // shell loops that never sleep
	IOHog    bool          // a writer of 64 MiB files, each flushed
	Poll     time.Duration // each node's view read this often (1s when 0)
	Out      io.Writer
}

// FalseAlarmResult is what FalseAlarm counted.
type FalseAlarmResult struct {
	Elapsed   time.Duration
	PeerDowns []string  // the peer_down log lines
	Views     []string  // a member seen other than up, or a node not answering
	Moves     []Event   // journal lines after the cluster settled
	Overlaps  []Overlap // a service on more nodes than it may (whole journal)
	// Load is the 1-minute load average sampled every 10 s
	Load []float64
	// RunDelay is, per node, the daemon's threads' time waiting for a
	// processor over the run (schedstat), and Slices their time slices
	RunDelay map[string]time.Duration
	Slices   map[string]int64
}

// False is the number of false alarms: downs, moves and overlaps.
func (r FalseAlarmResult) False() int { return len(r.PeerDowns) + len(r.Moves) + len(r.Overlaps) }

// FalseAlarm runs the watch; c must be started (Cluster.Start).
func FalseAlarm(c *Cluster, fc FalseAlarmConfig) (FalseAlarmResult, error) {
	res := FalseAlarmResult{RunDelay: map[string]time.Duration{}, Slices: map[string]int64{}}
	if fc.Out == nil {
		fc.Out = io.Discard
	}
	if fc.Poll <= 0 {
		fc.Poll = time.Second
	}
	where, err := c.waitStable(60 * time.Second)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(fc.Out, "settled: %v; load %s\n", where, loadavg())
	from := c.journalLines()
	logs := c.logSizes()
	delay0, slices0 := map[string]time.Duration{}, map[string]int64{}
	for _, n := range c.Names {
		delay0[n], slices0[n] = schedstat(c.Nodes[n].DaemonPid())
	}
	stop, err := c.startHogs(fc.CPUHogs, fc.IOHog)
	if err != nil {
		return res, err
	}
	defer stop()
	fmt.Fprintf(fc.Out, "hogs: %d CPU loops, I/O %v; watching for %s\n", fc.CPUHogs, fc.IOHog, fc.Duration)
	t0 := time.Now()
	end := t0.Add(fc.Duration)
	nextLoad, nextLine := t0, t0.Add(time.Minute)
	for now := t0; now.Before(end); now = time.Now() {
		if !now.Before(nextLoad) {
			if l, err := strconv.ParseFloat(strings.Fields(loadavg())[0], 64); err == nil {
				res.Load = append(res.Load, l)
			}
			nextLoad = now.Add(10 * time.Second)
		}
		for _, a := range c.Names {
			st, err := c.Nodes[a].Status()
			if err != nil {
				res.Views = append(res.Views, fmt.Sprintf("+%s %s", now.Sub(t0).Round(time.Second), err))
				continue
			}
			for _, b := range c.Names {
				if s := st.Nodes[b].Status; s != dataset.NodeUp {
					res.Views = append(res.Views, fmt.Sprintf("+%s %s saw %s %s", now.Sub(t0).Round(time.Second), a, b, s))
				}
			}
		}
		if !now.Before(nextLine) {
			fmt.Fprintf(fc.Out, "+%s load %s, peer_down %d, views not up %d, journal lines %d (from %d)\n",
				now.Sub(t0).Round(time.Second), loadavg(), len(c.newLogLines(logs, `"event": "peer_down"`)), len(res.Views), c.journalLines(), from)
			nextLine = now.Add(time.Minute)
		}
		time.Sleep(time.Until(now.Add(fc.Poll)))
	}
	res.Elapsed = time.Since(t0)
	stop()
	for _, n := range c.Names {
		d, s := schedstat(c.Nodes[n].DaemonPid())
		res.RunDelay[n], res.Slices[n] = d-delay0[n], s-slices0[n]
	}
	res.PeerDowns = c.newLogLines(logs, `"event": "peer_down"`)
	ev, err := ReadJournal(c.Journal)
	if err != nil {
		return res, err
	}
	for _, e := range ev {
		if e.Line > from {
			res.Moves = append(res.Moves, e)
		}
	}
	res.Overlaps = Excess(ev, c.limits())
	return res, nil
}

// Report prints r, with a RESULT line.
func (r FalseAlarmResult) Report(w io.Writer) {
	lo, hi, mean := 0.0, 0.0, 0.0
	if len(r.Load) > 0 {
		lo, hi = slices.Min(r.Load), slices.Max(r.Load)
		for _, l := range r.Load {
			mean += l
		}
		mean /= float64(len(r.Load))
	}
	fmt.Fprintf(w, "\nwatched %s; load average (1 min) mean %.1f, min %.1f, max %.1f (%d samples)\n", r.Elapsed.Round(time.Second), mean, lo, hi, len(r.Load))
	for _, n := range slices.Sorted(maps.Keys(r.RunDelay)) {
		per := time.Duration(0)
		if r.Slices[n] > 0 {
			per = r.RunDelay[n] / time.Duration(r.Slices[n])
		}
		fmt.Fprintf(w, "daemon of %s: waited %s for a processor over %d time slices (%s a slice)\n", n, r.RunDelay[n].Round(time.Millisecond), r.Slices[n], per.Round(time.Microsecond))
	}
	show := func(what string, xs []string) {
		fmt.Fprintf(w, "%s: %d\n", what, len(xs))
		for _, x := range xs[:min(len(xs), 20)] {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
	show("peer_down in the daemons' logs", r.PeerDowns)
	show("a member seen other than up (views polled)", r.Views)
	var moves, overlaps []string
	for _, e := range r.Moves {
		moves = append(moves, fmt.Sprintf("journal line %d: %.2f %s %s %s", e.Line, e.T, e.Node, e.Svc, e.Kind))
	}
	for _, o := range r.Overlaps {
		overlaps = append(overlaps, o.String())
	}
	show("starts or stops after the cluster settled (journal)", moves)
	show("a service on more nodes than it may (journal)", overlaps)
	fmt.Fprintf(w, "RESULT falsealarm elapsed=%s load_mean=%.1f load_min=%.1f peer_down=%d views=%d moves=%d overlaps=%d\n",
		r.Elapsed.Round(time.Second), mean, lo, len(r.PeerDowns), len(r.Views), len(r.Moves), len(r.Overlaps))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// schedstat sums the time pid's threads waited on a run queue and their
// time slices (/proc/PID/task/*/schedstat; threads that ended are not
// counted).
func schedstat(pid int) (time.Duration, int64) {
	var wait time.Duration
	var n int64
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			continue
		}
		w, _ := strconv.ParseInt(f[1], 10, 64)
		s, _ := strconv.ParseInt(f[2], 10, 64)
		wait += time.Duration(w)
		n += s
	}
	return wait, n
}

// hogIP is the address of the hogs' namespace on the bed's bridge.
const hogIP = Subnet + "250"

// startHogs starts the hogs in a namespace of their own in the bed (the
// chaos command's record removes it and them whatever way it ends), each
// the leader of a process group, and returns what ends them all.
func (c *Cluster) startHogs(cpu int, io bool) (func(), error) {
	work := c.Work
	if _, ok := c.Bed.NS["hog"]; !ok {
		if err := c.Bed.AddHost("hog", hogIP); err != nil {
			return nil, err
		}
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			c.Wait()
		}
		cmds = nil
		os.Remove(filepath.Join(work, "iohog"))
	}
	scripts := slices.Repeat([]string{"while :; do :; done"}, cpu)
	if io {
		scripts = append(scripts, fmt.Sprintf("while :; do dd if=/dev/zero of=%s bs=1M count=64 conv=fsync status=none; done", filepath.Join(work, "iohog")))
	}
	for _, s := range scripts {
		cmd := c.Bed.Command("hog", "sh", "-c", s)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, cmd)
	}
	return stop, nil
}
