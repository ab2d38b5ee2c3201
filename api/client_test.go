package api

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestConnErrTellsBusyFromAbsent: a socket nobody listens on (no file, or a
// file left behind) is "not running"; a daemon that takes the connection
// but does not answer before the deadline is running, and is never
// reported as not running (nodemgr daemon stop printed "daemon not
// running" and exited 0 for a busy daemon).
func TestConnErrTellsBusyFromAbsent(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	_, err := NewClient(filepath.Join(dir, "none.sock")).DaemonStatus(ctx)
	if !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("no socket file: %v, want ErrNoDaemon", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(stale); err != nil {
		t.Fatal(err)
	}
	_, err = NewClient(stale).DaemonStatus(ctx)
	if !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("socket file with no listener: %v, want ErrNoDaemon", err)
	}

	busy := filepath.Join(dir, "busy.sock")
	bl, err := net.Listen("unix", busy)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	go func() {
		var conns []net.Conn // taken, never answered
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := bl.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = NewClient(busy).DaemonStatus(cctx)
	if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNoDaemon) {
		t.Fatalf("a daemon that does not answer: %v, want ErrNoAnswer", err)
	}
}
