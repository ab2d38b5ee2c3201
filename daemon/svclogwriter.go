package daemon

import (
	"sync"

	"go.uber.org/zap"
)

// lineWriterMax bounds the bytes queued and not yet written: past it, the
// lines are dropped and counted (a stuck disk never grows the daemon's
// memory without bound), and the count is written once the disk takes
// writes again.
const lineWriterMax = 8 << 20

// lineWriter writes the lines of the service logs off the event loop: the
// loop (and the resource commands' output) queue them, one goroutine
// appends them, file by file, in the order queued. A failed write is
// reported to onErr once per run of failures of a file (the daemon logs
// it); the lines are not retried.
type lineWriter struct {
	write func(file string, b []byte) error

	mu      sync.Mutex
	cond    *sync.Cond
	order   []string          // files with lines queued, in the order first queued
	pending map[string][]byte // lines queued, by file
	size    int
	dropped map[string]int
	busy    bool // a write is in flight
	closed  bool
	done    chan struct{}
	// onErr gets the first error of a run of failures of a file, and nil
	// when it is written again (from the writer's goroutine).
	onErr   func(file string, err error)
	failing map[string]bool
	// droppedLine is the line that says n lines were dropped.
	droppedLine func(n int) string
}

// onError sets the report of write failures.
func (w *lineWriter) onError(f func(file string, err error)) {
	w.mu.Lock()
	w.onErr = f
	w.mu.Unlock()
}

func newLineWriter(write func(file string, b []byte) error, droppedLine func(n int) string) *lineWriter {
	w := &lineWriter{write: write, droppedLine: droppedLine, pending: map[string][]byte{}, dropped: map[string]int{}, failing: map[string]bool{},
		done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// queue adds a line for file; it never blocks on the disk.
func (w *lineWriter) queue(file, line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.size+len(line) > lineWriterMax {
		w.dropped[file]++
		return
	}
	if _, ok := w.pending[file]; !ok {
		w.order = append(w.order, file)
	}
	w.pending[file] = append(w.pending[file], line...)
	w.size += len(line)
	w.cond.Broadcast()
}

// flush waits until what was queued before the call is written.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for (len(w.order) > 0 || w.busy) && !w.closed {
		w.cond.Wait()
	}
}

// close writes what is queued, then stops the writer.
func (w *lineWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done
}

func (w *lineWriter) run() {
	defer close(w.done)
	w.mu.Lock()
	for {
		for len(w.order) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.order) == 0 {
			w.mu.Unlock()
			return
		}
		file := w.order[0]
		w.order = w.order[1:]
		b := w.pending[file]
		delete(w.pending, file)
		w.size -= len(b)
		w.busy = true
		w.mu.Unlock()

		err := w.write(file, b)

		w.mu.Lock()
		w.busy = false
		if err == nil && w.dropped[file] > 0 {
			// said once the disk takes writes again
			n := w.dropped[file]
			delete(w.dropped, file)
			w.mu.Unlock()
			err = w.write(file, []byte(w.droppedLine(n)))
			w.mu.Lock()
		}
		if (err != nil) != w.failing[file] {
			w.failing[file] = err != nil
			if f := w.onErr; f != nil {
				w.mu.Unlock()
				f(file, err)
				w.mu.Lock()
			}
		}
		w.cond.Broadcast()
	}
}

// svcLogFailed logs, on the loop, the first failed write of a run of
// failures of a service's log (err) and its recovery (nil).
func (d *Daemon) svcLogFailed(svc string, err error) {
	if err != nil {
		d.log.Error("service log not written: its lines are lost until the disk takes writes again",
			zap.String("svc", svc), zap.String("file", d.p.ServiceLog(svc)), zap.Error(err))
		return
	}
	d.log.Info("service log written again", zap.String("svc", svc), zap.String("file", d.p.ServiceLog(svc)))
}
