package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The journal's stop lines are written by the stop script once the app is
// gone, and by the suite when it kills an app itself. A process killed by
// something else (the node guard SIGKILLs every process of a node's
// failover instances when its daemon's lease runs out: the app cannot say
// it ended) would stay up in the journal for ever, and the next start of
// its service elsewhere would read as running twice.
//
// The reaper is the observer outside the cluster that closes those (a
// script or the suite that kills an app leaves a mark first, and
// journals that end itself): it
// finds every app process of the bed (its command line names the service,
// its network namespace the node) by reading /proc every reapScan, holds
// a pidfd of each and, when one ends, journals the stop of its service on
// its node at that instant unless the journal shows a start of that
// service on that node since the process was found (a new start, whose
// process may not be found yet: the instance stays up in the journal) or
// another app of it lives there. It trusts nothing a daemon says. A
// process that lived less than reapScan is never found: its start stays
// open in the journal, which can only add overlaps, never hide one.

// reapScan is how often the reaper looks for new app processes.
const reapScan = 100 * time.Millisecond

// reaper watches the bed's app processes for the journal.
type reaper struct {
	c    *Cluster
	mu   sync.Mutex
	seen map[int]*reaped // by pid, while it lives
	// ended is when each process found ended, by pid
	ended map[int]time.Time
	ns    map[string]string
	stop  chan struct{}
	wg    sync.WaitGroup
}

// reaped is one app process found alive.
type reaped struct {
	node, svc string
	// starts is the number of journal starts of svc on node when the
	// process was found
	starts int
}

// startReaper starts the reaper of the bed's apps (Close stops it).
func (c *Cluster) startReaper() error {
	r := &reaper{c: c, seen: map[int]*reaped{}, ended: map[int]time.Time{}, ns: map[string]string{}, stop: make(chan struct{})}
	for n, ns := range c.Bed.NS {
		id, err := nsID(filepath.Join("/run/netns", ns))
		if err != nil {
			return fmt.Errorf("the reaper: namespace of %s: %w", n, err)
		}
		r.ns[id] = n
	}
	c.reaper = r
	r.wg.Add(1)
	go r.scan()
	return nil
}

// nsID names a network namespace by its device and inode, as readlink
// of /proc/PID/ns/net does ("net:[INODE]" carries the inode only).
func nsID(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	return strconv.FormatUint(st.Ino, 10), nil
}

// close stops the reaper and waits for its goroutines.
func (r *reaper) close() {
	close(r.stop)
	r.wg.Wait()
}

func (r *reaper) scan() {
	defer r.wg.Done()
	t := time.NewTicker(reapScan)
	defer t.Stop()
	for {
		r.find()
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

// find looks for app processes not seen yet and watches each.
func (r *reaper) find() {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		r.mu.Lock()
		_, known := r.seen[pid]
		r.mu.Unlock()
		if known {
			continue
		}
		svc := r.appOf(pid)
		if svc == "" {
			continue
		}
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			continue
		}
		node := r.ns[strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]")]
		if node == "" {
			continue // an app outside the bed's hosts: the audits report it
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already: never found
		}
		// the pid may have been reused between the read and the open
		if r.appOf(pid) != svc {
			unix.Close(fd)
			continue
		}
		ev, err := ReadJournal(r.c.Journal)
		if err != nil {
			unix.Close(fd)
			continue
		}
		p := &reaped{node: node, svc: svc, starts: startsOf(ev, node, svc)}
		r.mu.Lock()
		r.seen[pid] = p
		r.mu.Unlock()
		r.wg.Add(1)
		go r.wait(pid, fd, p)
	}
}

// appOf is the service whose app pid runs, or "": its command's path is
// App(svc) (the services are read from the path, not from c.Services,
// which CreateServices fills while the reaper runs).
func (r *reaper) appOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	arg0, _, ok := strings.Cut(string(b), "\x00")
	if !ok || filepath.Dir(arg0) != r.c.Work {
		return ""
	}
	svc, ok := strings.CutPrefix(filepath.Base(arg0), "app-")
	if !ok {
		return ""
	}
	return svc
}

// wait journals the end of p (pid, watched through fd).
func (r *reaper) wait(pid, fd int, p *reaped) {
	defer r.wg.Done()
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(reapScan/time.Millisecond))
		if err != nil && err != syscall.EINTR {
			return
		}
		if n > 0 {
			break
		}
		select {
		case <-r.stop:
			return
		default:
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, pid)
	r.ended[pid] = time.Now()
	if os.Remove(r.c.endingMark(pid)) == nil {
		return // a script or the suite killed it and journals its end
	}
	for _, o := range r.seen {
		if o.node == p.node && o.svc == p.svc {
			return // another app of it lives there
		}
	}
	ev, err := ReadJournal(r.c.Journal)
	if err != nil || startsOf(ev, p.node, p.svc) != p.starts {
		return
	}
	for _, n := range UpAt(ev)[p.svc] {
		if n == p.node {
			if err := r.c.journalStop(p.node, p.svc); err != nil {
				fmt.Fprintf(os.Stderr, "chaos: the reaper could not journal the end of %s on %s: %v\n", p.svc, p.node, err)
			}
			return
		}
	}
}

// tracking reports whether pid is an app process the reaper watches
// (found alive, its end not judged yet).
func (r *reaper) tracking(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[pid] != nil
}

// endOf is when the app process pid ended, if the reaper saw it end.
func (r *reaper) endOf(pid int) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.ended[pid]
	return at, ok
}

// endingMark is the file a script or the suite leaves before it kills
// the app pid: it journals that end itself.
func (c *Cluster) endingMark(pid int) string {
	return filepath.Join(c.Work, "ending", strconv.Itoa(pid))
}

// markEnding says that the suite kills the app pid and journals its end.
func (c *Cluster) markEnding(pid int) {
	if err := os.WriteFile(c.endingMark(pid), nil, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
	}
}

// startsOf counts the journal's starts of svc on node.
func startsOf(ev []Event, node, svc string) int {
	n := 0
	for _, e := range ev {
		if e.Kind == "start" && e.Node == node && e.Svc == svc {
			n++
		}
	}
	return n
}
