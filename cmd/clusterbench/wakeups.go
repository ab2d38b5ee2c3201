package main

// Where an idle process's wake-ups come from (docs/benchmarks.md, "Idle
// wake-ups by source"): `strace -f` of the process over a window, its
// system calls grouped into bursts (a burst ends when the process made no
// call for burstGap), each burst named by the first source of this list
// whose calls it holds. The runtime's monitor thread (sysmon) sleeps in
// nanosleep between its looks at a busy process: those calls are counted
// apart and never start or name a burst.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// burstGap ends a burst: the process made no other call for that long.
// The trace slows each call, and a wake-up's calls (a timer's expiry,
// the work, the exchange with the guard and its answer) spread over a
// few milliseconds on a loaded host; the sources of an idle daemon come
// hundreds of milliseconds apart.
const burstGap = 20 * time.Millisecond

// wakeSources are the names of a burst, in their order of precedence:
// the first whose test holds for one of the burst's calls names it.
var wakeSources = []struct {
	name string
	is   func(call, line string) bool
}{
	{"check or action (fork, exec, wait)", func(c, _ string) bool {
		return c == "clone" || c == "clone3" || c == "execve" || c == "wait4" || c == "waitid" || c == "pidfd_open"
	}},
	{"guard exchange (renewal, status)", func(c, l string) bool {
		return (c == "write" || c == "read") && (strings.Contains(l, `{\"op\":`) || strings.Contains(l, `{\"version\":`))
	}},
	{"heartbeat (beats sent or received)", func(c, l string) bool {
		return strings.HasPrefix(c, "send") || strings.HasPrefix(c, "recv")
	}},
	{"load and memory read (sysinfo)", func(_, l string) bool {
		return strings.Contains(l, "/proc/loadavg") || strings.Contains(l, "/proc/meminfo")
	}},
	{"local API (a client)", func(c, _ string) bool { return c == "accept4" || c == "accept" }},
	{"file write (state, logs)", func(c, l string) bool {
		return c == "fsync" || c == "fdatasync" || c == "renameat" || c == "rename" || c == "renameat2" ||
			(c == "write" || c == "pwrite64") && strings.Contains(l, "</") && !strings.Contains(l, "<anon_inode")
	}},
	{"timer only (no I/O)", func(string, string) bool { return true }},
}

// wakeCount is what straceWakeups found for one process.
type wakeCount struct {
	what    string
	secs    float64
	bursts  map[string]int
	sysmon  int // nanosleep calls: the runtime's monitor
	calls   int
	traceOK bool
}

// straceWakeups traces pid (and its threads) for span and counts its
// bursts by source. It needs strace; the trace slows the process's calls,
// not their number.
func straceWakeups(what string, pid int, span time.Duration) (wakeCount, error) {
	w := wakeCount{what: what, bursts: map[string]int{}}
	f, err := os.CreateTemp("", "clusterbench-strace-*.txt")
	if err != nil {
		return w, err
	}
	f.Close()
	defer os.Remove(f.Name())
	args := []string{"-s", "INT", strconv.Itoa(int(span.Seconds())), "strace", "-f", "-qq", "-ttt", "-yy", "-s", "48", "-o", f.Name()}
	// every thread named: -f alone attached to the main thread only in
	// some runs (a Go program's main thread sleeps in a wait)
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, t := range tasks {
		args = append(args, "-p", filepath.Base(t))
	}
	if len(tasks) == 0 {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	cmd := exec.Command("timeout", args...)
	if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 124 && cmd.ProcessState.ExitCode() != 130 {
		if len(out) > 0 && !strings.Contains(string(out), "Process") {
			return w, fmt.Errorf("strace: %v: %s", err, out)
		}
	}
	tf, err := os.Open(f.Name())
	if err != nil {
		return w, err
	}
	defer tf.Close()
	type call struct {
		at         float64
		name, line string
	}
	var calls []call
	sc := bufio.NewScanner(tf)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		// TID SECONDS.MICROS name(args...) or <... name resumed>
		fs := strings.SplitN(sc.Text(), " ", 3)
		if len(fs) < 3 {
			continue
		}
		at, err := strconv.ParseFloat(fs[1], 64)
		if err != nil {
			continue
		}
		rest := fs[2]
		name := rest
		if r, ok := strings.CutPrefix(rest, "<... "); ok {
			name, _, _ = strings.Cut(r, " ")
		} else if i := strings.IndexByte(rest, '('); i > 0 {
			name = rest[:i]
		} else {
			continue // a signal or an exit
		}
		calls = append(calls, call{at, name, rest})
	}
	if len(calls) == 0 {
		return w, fmt.Errorf("strace of %s (pid %d) saw no call", what, pid)
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].at < calls[j].at })
	w.calls, w.traceOK = len(calls), true
	w.secs = span.Seconds()
	var burst []call
	end := func() {
		if len(burst) == 0 {
			return
		}
		for _, s := range wakeSources {
			for _, c := range burst {
				if s.is(c.name, c.line) {
					w.bursts[s.name]++
					burst = burst[:0]
					return
				}
			}
		}
	}
	last := 0.0
	for _, c := range calls {
		if c.name == "nanosleep" || c.name == "clock_nanosleep" {
			w.sysmon++
			continue
		}
		if c.at-last > burstGap.Seconds() {
			end()
		}
		burst = append(burst, c)
		last = c.at
	}
	end()
	return w, nil
}

// printWakeups prints the bursts a second of each process by source.
func printWakeups(node string, ws []wakeCount) {
	fmt.Printf("%s, wake-ups by source (bursts of calls: none for %s ends one; strace -f over the window):\n", node, burstGap)
	fmt.Printf("  %-10s %-38s %s\n", "process", "source", "per second")
	for _, w := range ws {
		total := 0
		for _, s := range wakeSources {
			if n := w.bursts[s.name]; n > 0 {
				fmt.Printf("  %-10s %-38s %.2f\n", w.what, s.name, float64(n)/w.secs)
				total += n
			}
		}
		fmt.Printf("  %-10s %-38s %.2f\n", w.what, "all bursts", float64(total)/w.secs)
		fmt.Printf("  %-10s %-38s %.2f\n", w.what, "runtime monitor's sleeps (nanosleep)", float64(w.sysmon)/w.secs)
		fmt.Printf("RESULT wakeups node=%s process=%s bursts_per_s=%.2f sysmon_per_s=%.2f calls_per_s=%.1f\n",
			node, w.what, float64(total)/w.secs, float64(w.sysmon)/w.secs, float64(w.calls)/w.secs)
	}
}
