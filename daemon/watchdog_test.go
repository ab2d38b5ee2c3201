package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/config"
)

// TestWatchdogRefusesWhatIsNoWatchdog: /dev/null, /dev/zero, a regular
// file, a FIFO (with no reader: its open must not block) and a directory
// are refused, each saying why; a regular file is taken only in the tests'
// mode (HAVEN_WATCHDOG_FILE).
func TestWatchdogRefusesWhatIsNoWatchdog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/null": "the watchdog ioctls fail",
		"/dev/zero": "the watchdog ioctls fail",
		file:        "a regular file",
		fifo:        "a FIFO",
		dir:         "a directory",
	} {
		done := make(chan error, 1)
		go func() {
			w, err := openWatchdog(path, 0, false)
			if w != nil {
				w.disarm()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want refused: %s", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the open blocks", path)
		}
	}
	w, err := openWatchdog(file, time.Second, true)
	if err != nil {
		t.Fatalf("a regular file in the tests' mode: %v", err)
	}
	w.disarm()
}

// TestWatchdogTimeoutBelowTheFenceWait: a watchdog whose timeout is at or
// above the shortest fence wait of the disk is refused (a survivor could
// count the node fenced before its host is reset).
func TestWatchdogTimeoutBelowTheFenceWait(t *testing.T) {
	d := &Daemon{node: &config.NodeConfig{Name: "n1", HB: config.HBConfig{Timeout: 3 * time.Second, Interval: time.Second,
		Disk: config.HBDiskConfig{Path: "/d", Fence: true, Timeout: 2 * time.Second}}},
		cluster: &config.ClusterConfig{Quorum: true, Nodes: []config.Member{{Name: "n1"}, {Name: "n2"}}}}
	// 2 x 2s + (beat 0.5s + no arbitrator + no stop budget + beat 0.5s)
	if w := d.minFenceWait(); w != 5*time.Second {
		t.Fatalf("shortest fence wait %s, want 5s", w)
	}
	if err := timeoutBelow(60*time.Second, d.minFenceWait()); err == nil || !strings.Contains(err.Error(), "at or above the shortest fence wait 5s") {
		t.Fatalf("softdog's default 60s: %v", err)
	}
	if err := timeoutBelow(4*time.Second, d.minFenceWait()); err != nil {
		t.Fatal(err)
	}
	d.node.HB.Disk.Fence = false
	if w := d.minFenceWait(); w != 0 {
		t.Fatalf("no disk fence: limit %s", w)
	}
}
