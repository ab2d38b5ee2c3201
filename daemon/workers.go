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

// checkQueue runs the core's checks at most max at once, in the order
// they were asked. The checks of a batch (those due in the same
// twelfth of check_interval or monitor_interval: every service when they
// were created, or the daemon started, together) used to start at once:
// 200 process starts, 200 children on the CPUs together. Fewer at once
// cost the daemon less per check, down to four a CPU (a batch of 200 `true`
// on 2 CPUs, GOMAXPROCS=1, BenchmarkAppCheckBatch's way: 100 µs a check
// all at once, 82-90 µs with 8 at once; 1 at once 137-174 µs, the waits no
// longer overlap), and the host sees no burst of 200 processes.
//
// A check that hangs must not hold the others: when none of the running
// checks ended for slowCheck while others wait, the running ones are slow
// and no longer count (a new epoch): up to max more start.
type checkQueue struct {
	clk   clock.Clock
	max   int
	start func(job func()) // runs job on a worker

	mu       sync.Mutex
	waiting  []func()
	counted  int    // running checks of the current epoch
	epoch    uint64 // bumped when the running checks are found slow
	ended    uint64 // checks ended, of any epoch
	watching bool   // a watch is under way (waiting is not empty)
	closed   bool
}

// slowCheck is how long the running checks may go without one ending
// while others wait.
const slowCheck = 100 * time.Millisecond

// checkSlots is how many checks run at once: four a CPU (the children
// need them; the daemon itself runs on one).
func checkSlots() int { return max(4, 4*runtime.NumCPU()) }

// add queues a check.
func (q *checkQueue) add(job func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.waiting = append(q.waiting, job)
	q.dispatchLocked()
}

// dispatchLocked starts the checks that may start, and watches the others.
func (q *checkQueue) dispatchLocked() {
	for len(q.waiting) > 0 && q.counted < q.max && !q.closed {
		job := q.waiting[0]
		q.waiting[0] = nil
		q.waiting = q.waiting[1:]
		q.counted++
		epoch := q.epoch
		q.start(func() {
			job()
			q.end(epoch)
		})
	}
	if len(q.waiting) > 0 && !q.watching && !q.closed {
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
		if len(q.waiting) == 0 || q.closed {
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
	q.waiting = nil
}
