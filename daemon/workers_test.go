package daemon

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// goroutineID is the calling goroutine's number, from its stack trace.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// idleWorkers is the pool's count of idle workers.
func (p *workerPool) idleWorkers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle
}

// Jobs run at once, each on its own worker (one that blocks holds no
// other); a worker that finished waits for the next job instead of
// ending, up to maxIdleWorkers; close ends the idle ones, and a job given
// after it still runs.
func TestWorkerPool(t *testing.T) {
	p := &workerPool{}
	release := make(chan struct{})
	var started, finished sync.WaitGroup
	const n = maxIdleWorkers + 8
	started.Add(n)
	finished.Add(n)
	for range n {
		p.run(func() {
			started.Done()
			<-release
			finished.Done()
		})
	}
	started.Wait() // every job runs while the others block
	close(release)
	finished.Wait()
	waitFor(t, 5*time.Second, "maxIdleWorkers idle workers", func() bool { return p.idleWorkers() == maxIdleWorkers })
	ran := map[string]bool{} // the goroutines that ran the jobs
	for range 100 {          // one after the other: each on a kept worker
		done := make(chan string)
		p.run(func() { done <- goroutineID() })
		ran[<-done] = true
	}
	if len(ran) > maxIdleWorkers {
		t.Fatalf("100 jobs one after the other ran on %d goroutines: not on the %d idle workers", len(ran), maxIdleWorkers)
	}
	p.close()
	waitFor(t, 5*time.Second, "the idle workers to end", func() bool { return p.idleWorkers() == 0 })
	done := make(chan struct{})
	p.run(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a job given after close did not run")
	}
}
