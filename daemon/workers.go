package daemon

import "sync"

// workerPool runs the daemon's workers (the core's checks and actions) on
// goroutines kept between them. A new goroutine starts with a small stack
// and grows it on every check (a process start is deep): a goroutine kept
// has it grown already. An idle worker costs no wake-up, only its stack:
// at most maxIdleWorkers are kept, the others end (issue 26). The zero
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
