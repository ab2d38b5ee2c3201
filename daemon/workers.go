package daemon

import (
	"runtime"
	"sync"
	"time"

	"haven/internal/clock"
)

// workerPool runs the daemon's workers (the core's checks and actions) on
// goroutines kept between them. A new goroutine starts with a small stack
// and grows it on every check (a process start is deep): a goroutine kept
// has it grown already. An idle worker costs no wake-up, only its stack:
// at most maxIdleWorkers are kept, the others end. The zero
// value is ready to use.
type workerPool struct {
	jobs chan func() // unbuffered: a send succeeds only to an idle worker (made by the first run)
	mu   sync.Mutex
	idle int  // workers waiting on jobs
	done bool // closed: workers end
}

// maxIdleWorkers bounds the idle workers kept: the checks of one batch
// (a twelfth of check_interval) run together, a few dozen with hundreds
// of services.
const maxIdleWorkers = 32

// run runs f on an idle worker, or on a new one (always once closed).
func (p *workerPool) run(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.jobs == nil {
		p.jobs = make(chan func())
	}
	if !p.done {
		select {
		case p.jobs <- f: // the worker takes mu after: no deadlock
			return
		default:
		}
	}
	go p.work(f)
}

// work runs f, then the jobs given to it while it is idle.
func (p *workerPool) work(f func()) {
	for {
		f()
		p.mu.Lock()
		if p.done || p.idle >= maxIdleWorkers {
			p.mu.Unlock()
			return
		}
		p.idle++
		p.mu.Unlock()
		var ok bool
		f, ok = <-p.jobs
		p.mu.Lock()
		p.idle--
		p.mu.Unlock()
		if !ok {
			return
		}
	}
}

// close ends the idle workers, and each busy one after its job.
func (p *workerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.done = true
		if p.jobs != nil {
			close(p.jobs)
		}
	}
}

// checkQueue runs the core's checks at most max at once: those something
// waits on first (the check that ends an action, that of a new config, an
// answer's), in the order they were asked, then the periodic ones
// (node.Check.Periodic), in the order they were asked. The checks of a
// batch (those due in the same twelfth of check_interval or
// monitor_interval: every service when they were created, or the daemon
// started, together) used to start at once: 200 process starts, 200
// children on the CPUs together. Fewer at once cost the daemon less per
// check, down to four a CPU (a batch of 200 `true` on 2 CPUs,
// GOMAXPROCS=1, BenchmarkAppCheckBatch's way: 100 µs a check all at once,
// 82-90 µs with 8 at once; 1 at once 137-174 µs, the waits no longer
// overlap), and the host sees no burst of 200 processes. A start's check
// does not wait for a batch of periodic ones queued before it (with 500
// instances a node, 40 a batch: seconds on a loaded host).
//
// A check that hangs must not hold the others: when none of the running
// checks ended for slowCheck while others wait, the running ones are slow
// and no longer count (a new epoch): up to max more start.
type checkQueue struct {
	clk   clock.Clock
	max   int
	start func(job func()) // runs job on a worker

	mu       sync.Mutex
	first    []queuedCheck // what something waits on
	waiting  []queuedCheck // the periodic checks
	counted  int           // running checks of the current epoch
	epoch    uint64        // bumped when the running checks are found slow
	ended    uint64        // checks ended, of any epoch
	watching bool          // a watch is under way (a check waits)
	closed   bool
}

// queuedCheck is a check that waits for a slot, with its service.
type queuedCheck struct {
	svc string
	job func()
}

// slowCheck is how long the running checks may go without one ending
// while others wait.
const slowCheck = 100 * time.Millisecond

// checkSlots is how many checks run at once: four a CPU (the children
// need them; the daemon itself runs on one).
func checkSlots() int { return max(4, 4*runtime.NumCPU()) }

// add queues a check something waits on.
func (q *checkQueue) add(job func()) { q.push("", false, job) }

// push queues the check of svc, periodic or not.
func (q *checkQueue) push(svc string, periodic bool, job func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if periodic {
		q.waiting = append(q.waiting, queuedCheck{svc, job})
	} else {
		q.first = append(q.first, queuedCheck{svc, job})
	}
	q.dispatchLocked()
}

// promote moves the periodic checks of svc that wait ahead of the other
// periodic ones, behind those already first: an action of svc began, and
// the check that ends it comes only after them (node/checks.go: one check
// at a time per instance).
func (q *checkQueue) promote(svc string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.waiting[:0]
	for _, c := range q.waiting {
		if c.svc == svc {
			q.first = append(q.first, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	q.dispatchLocked()
}

// pendingLocked is how many checks wait.
func (q *checkQueue) pendingLocked() int { return len(q.first) + len(q.waiting) }

// nextLocked takes the next check to run: the first lane, then the
// periodic one.
func (q *checkQueue) nextLocked() func() {
	lane := &q.first
	if len(*lane) == 0 {
		lane = &q.waiting
	}
	job := (*lane)[0].job
	(*lane)[0] = queuedCheck{}
	*lane = (*lane)[1:]
	return job
}

// dispatchLocked starts the checks that may start, and watches the others.
func (q *checkQueue) dispatchLocked() {
	for q.pendingLocked() > 0 && q.counted < q.max && !q.closed {
		job := q.nextLocked()
		q.counted++
		epoch := q.epoch
		q.start(func() {
			job()
			q.end(epoch)
		})
	}
	if q.pendingLocked() > 0 && !q.watching && !q.closed {
		q.watching = true
		go q.watch(q.ended)
	}
}

// end is the end of a check started in epoch.
func (q *checkQueue) end(epoch uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if epoch == q.epoch {
		q.counted--
	}
	q.ended++
	q.dispatchLocked()
}

// watch looks every slowCheck while checks wait: when none ended since
// the last look, the running ones are slow.
func (q *checkQueue) watch(seen uint64) {
	for {
		<-q.clk.After(slowCheck)
		q.mu.Lock()
		if q.pendingLocked() == 0 || q.closed {
			q.watching = false
			q.mu.Unlock()
			return
		}
		if q.ended == seen {
			q.epoch++
			q.counted = 0
			q.dispatchLocked()
		}
		seen = q.ended
		q.mu.Unlock()
	}
}

// close drops the checks that wait; none starts after it.
func (q *checkQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.first, q.waiting = nil, nil
}
