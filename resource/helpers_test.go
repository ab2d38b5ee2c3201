package resource

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logRec records the lines given to Env.Log.
type logRec struct {
	mu    sync.Mutex
	lines []string // "rid: line"
}

func (l *logRec) log(rid, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, rid+": "+line)
}

func (l *logRec) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func (l *logRec) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// testEnv returns an Env whose VarDir does not exist yet.
func testEnv(t testing.TB) (Env, *logRec) {
	t.Helper()
	rec := &logRec{}
	return Env{
		Service: "websvc",
		Node:    "n1",
		VarDir:  filepath.Join(t.TempDir(), "var", "websvc"),
		Log:     rec.log,
	}, rec
}

// script writes an executable sh script and returns its path.
func script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPid waits for a file holding a pid and returns it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, "no pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// alive reports whether pid runs (a zombie does not count: nothing reaps
// orphans in some containers).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// killGroupOf kills pid's whole process group at the end of the test.
func killGroupOf(t *testing.T, pid int) {
	t.Cleanup(func() {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	})
}
