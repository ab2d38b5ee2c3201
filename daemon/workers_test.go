package daemon

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"haven/internal/clock"
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

// testQueue is a checkQueue of the given slots on a fake clock, its jobs
// on goroutines of their own; starts counts the jobs it started (start
// runs under the queue's lock, in add, end or the watch: the count is
// exact as soon as one of them returned).
func testQueue(slots int) (q *checkQueue, clk *clock.Fake, starts *atomic.Int64) {
	clk = clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	starts = new(atomic.Int64)
	return &checkQueue{clk: clk, max: slots, start: func(job func()) { starts.Add(1); go job() }}, clk, starts
}

// Checks run at most max at once, each as soon as a slot is free; one at
// a time, in the order they were asked.
func TestCheckQueueBoundsAndOrder(t *testing.T) {
	for _, slots := range []int{3, 1} {
		q, _, _ := testQueue(slots)
		var mu sync.Mutex
		running, most := 0, 0
		var order []int
		release := make(chan struct{})
		var wg sync.WaitGroup
		const n = 20
		wg.Add(n)
		for i := range n {
			q.add(func() {
				mu.Lock()
				running++
				most = max(most, running)
				order = append(order, i)
				mu.Unlock()
				<-release
				mu.Lock()
				running--
				mu.Unlock()
				wg.Done()
			})
		}
		waitFor(t, 5*time.Second, "the slots taken", func() bool { mu.Lock(); defer mu.Unlock(); return running == slots })
		close(release)
		wg.Wait()
		if most != slots {
			t.Errorf("%d slots: %d checks ran at once", slots, most)
		}
		if slots == 1 {
			for i := range n {
				if order[i] != i {
					t.Fatalf("order %v: want the checks in the order asked", order)
				}
			}
		}
	}
}

// Checks that hang do not hold the others: once none of the running ones
// ended for slowCheck, max more start; close drops those that wait.
func TestCheckQueueSlowChecksGiveWay(t *testing.T) {
	q, clk, starts := testQueue(2)
	hang := make(chan struct{})
	defer close(hang)
	for range 2 {
		q.add(func() { <-hang })
	}
	ran := make(chan int, 10)
	for i := range 4 {
		q.add(func() { ran <- i })
	}
	if n := starts.Load(); n != 2 {
		t.Fatalf("%d checks started with two slots, two checks hung and the clock still: want 2", n)
	}
	waitFor(t, 5*time.Second, "the two hung checks found slow", func() bool {
		clk.Advance(slowCheck)
		return len(ran) == 4
	})
	q.close()
	q.add(func() { ran <- 99 })
	clk.Advance(slowCheck)
	if n := starts.Load(); n != 6 {
		t.Fatalf("%d checks started, want 6: one was started after close", n)
	}
}

// The checks something waits on (the one that ends an action) run before
// the periodic ones asked earlier; promote brings the periodic checks of
// a service whose action began ahead of the other periodic ones (the
// check that ends its action comes after them); each lane keeps the order
// it was asked in.
func TestCheckQueueFirstLane(t *testing.T) {
	q, _, _ := testQueue(1)
	var mu sync.Mutex
	var order []string
	release := make(chan struct{})
	var wg sync.WaitGroup
	job := func(name string) func() {
		wg.Add(1)
		return func() {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			if name == "hold" {
				<-release
			}
			wg.Done()
		}
	}
	q.push("h", true, job("hold")) // takes the one slot
	for _, s := range []string{"p1", "p2", "p3", "p4"} {
		q.push(s, true, job(s))
	}
	q.push("a", false, job("a"))
	q.promote("p3")
	q.push("b", false, job("b"))
	q.promote("nothing queued")
	close(release)
	wg.Wait()
	if got, want := strings.Join(order, " "), "hold a p3 b p1 p2 p4"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
}
