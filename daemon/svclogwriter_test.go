package daemon

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The service logs are written off the loop, in order per file;
// flush waits for what was queued; a failing disk is reported once per run
// of failures, and the lines dropped meanwhile are counted in the file.
func TestLineWriterOrdersAndReports(t *testing.T) {
	var mu sync.Mutex
	files := map[string]string{}
	fail := false
	gate := make(chan struct{})
	w := newLineWriter(func(file string, b []byte) error {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("no space left on device")
		}
		files[file] += string(b)
		return nil
	}, func(n int) string { return fmt.Sprintf("dropped %d\n", n) })
	defer w.close()
	var reports []string
	w.onError(func(file string, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, fmt.Sprintf("%s:%v", file, err))
	})
	// the writer is held: queue never waits for the disk
	for i := 0; i < 100; i++ {
		w.queue("web", fmt.Sprintf("web %d\n", i))
		w.queue("db", fmt.Sprintf("db %d\n", i))
	}
	close(gate) // the disk takes writes again
	w.flush()
	mu.Lock()
	for _, f := range []string{"web", "db"} {
		lines := strings.Split(strings.TrimSpace(files[f]), "\n")
		if len(lines) != 100 {
			t.Fatalf("%s: %d lines", f, len(lines))
		}
		for i, l := range lines {
			if l != fmt.Sprintf("%s %d", f, i) {
				t.Fatalf("%s: line %d is %q: out of order", f, i, l)
			}
		}
	}
	fail = true
	mu.Unlock()

	w.queue("web", "lost 1\n")
	w.flush()
	w.queue("web", "lost 2\n")
	w.flush()
	mu.Lock()
	if len(reports) != 1 || !strings.Contains(reports[0], "no space") {
		t.Fatalf("reports %v, want one for the run of failures", reports)
	}
	fail = false
	mu.Unlock()
	w.queue("web", "back\n")
	w.flush()
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 2 || reports[1] != "web:<nil>" || !strings.HasSuffix(files["web"], "back\n") {
		t.Fatalf("after recovery: reports %v, file ends %q", reports, files["web"][len(files["web"])-20:])
	}
}
