package resource

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// The probe begun at the silence of the node running the service
// (PrepareEarly) and taken by the ready window (Prepare): "free" within
// hb.timeout + probe_timeout of the silence is the start's answer (no
// second probe); the same probe too old, or never taken by a window, is
// not: the start waits a probe of its own (probe_timeout, 1s here).
func TestIPEarlyProbeFreeReused(t *testing.T) {
	a, _ := twoHosts(t)
	rc := ipRC("198.18.77.80", "24", "va")
	rc.ProbeTimeout = time.Second
	h := inNS(t, a, rc, "early 3s", "sleep 1200ms", "prepare", "start")
	if h[3].Err != "" || h[3].Status != dataset.StatusUp {
		t.Fatalf("start = %+v, want no error and up", h[3])
	}
	if log := strings.Join(h[3].Log, "\n"); !strings.Contains(log, "no answer for 198.18.77.80 since its node fell silent") {
		t.Errorf("start log:\n%s\nwant the answer of the probe begun at the silence", log)
	}
	if h[3].Took >= 700*time.Millisecond {
		t.Errorf("start after 1.2s of early probe took %s, want no second probe", h[3].Took)
	}

	cases := []struct {
		name    string
		actions []string
	}{
		// within 200ms + probe_timeout 1s: 1.2s at most, 1.5s passed
		{"too old", []string{"early 200ms", "sleep 1500ms", "prepare", "start"}},
		// a start without a window (the early probe is no window's)
		{"no window", []string{"early 3s", "sleep 1200ms", "sleep 0s", "start"}},
		// the silent node heard again: the window that comes later probes anew
		{"heard again", []string{"early 3s", "sleep 1200ms", "unprepare-early", "prepare", "start"}},
	}
	for i, c := range cases {
		rc.IPName = fmt.Sprintf("198.18.77.%d", 81+i)
		h := inNS(t, a, rc, c.actions...)
		last := h[len(h)-1]
		if last.Err != "" || last.Status != dataset.StatusUp {
			t.Fatalf("%s: start = %+v, want no error and up", c.name, last)
		}
		if last.Took < 900*time.Millisecond {
			t.Errorf("%s: start took %s, want a probe of its own (probe_timeout 1s)", c.name, last.Took)
		}
		if log := strings.Join(last.Log, "\n"); strings.Contains(log, "fell silent") {
			t.Errorf("%s: start log:\n%s\nwant no reuse of the early probe", c.name, log)
		}
	}
}

// A holder that answered the early probe (the lost node still held the
// address then) is never the start's answer: the window probes anew. The
// address let go since: the start proceeds (after a probe of its own);
// still held: the start refuses.
func TestIPEarlyProbeInUseNotReused(t *testing.T) {
	a, b := twoHosts(t)
	for _, keep := range []bool{false, true} {
		addr := "198.18.77.90"
		if keep {
			addr = "198.18.77.91"
		}
		rc := ipRC(addr, "24", "va")
		rc.ProbeTimeout = time.Second
		dir := t.TempDir()
		began, heard, goOn := filepath.Join(dir, "began"), filepath.Join(dir, "heard"), filepath.Join(dir, "go")
		exists := func(path string) func() bool { return func() bool { _, err := os.Stat(path); return err == nil } }
		done := make(chan []helperOut)
		go func() {
			done <- inNS(t, a, rc, "early 10s", "touch "+began, "await-early-holder", "touch "+heard, "await-file "+goOn, "prepare", "start")
		}()
		eventually(t, 10*time.Second, "the early probe began", exists(began))
		sh(t, "ip", "-n", b, "addr", "add", addr+"/24", "dev", "vb")
		eventually(t, 10*time.Second, "the early probe heard the holder", exists(heard))
		if !keep {
			sh(t, "ip", "-n", b, "addr", "del", addr+"/24", "dev", "vb")
		}
		if err := os.WriteFile(goOn, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h := <-done
		start := h[6]
		if keep {
			if !strings.Contains(start.Err, "already answers") || start.Status != dataset.StatusDown {
				t.Errorf("holder still there: start = %+v, want a refusal", start)
			}
			sh(t, "ip", "-n", b, "addr", "del", addr+"/24", "dev", "vb")
			continue
		}
		if start.Err != "" || start.Status != dataset.StatusUp {
			t.Errorf("holder gone before the window: start = %+v, want no error and up (a probe of its own found %s free)", start, addr)
		}
		if start.Took < 900*time.Millisecond {
			t.Errorf("holder gone before the window: start took %s, want a probe of its own (probe_timeout 1s)", start.Took)
		}
	}
}
