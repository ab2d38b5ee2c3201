package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write that fails (a full file system) says so once, naming the file
// written (not the temporary one, already removed).
func TestWriteAtomicErrorNamesTheFileOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	p := filepath.Join(dir, "web.toml")
	err := WriteAtomic(p, make([]byte, 1<<20), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	msg := err.Error()
	if msg != "write "+p+": no space left on device" {
		t.Fatalf("got %q, want %q", msg, "write "+p+": no space left on device")
	}
	if strings.Count(msg, "write") != 1 {
		t.Fatalf("doubled: %q", msg)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("%d files left in the full dir", len(ents))
	}
}

// A directory that cannot be written names the file and the cause once.
func TestWriteAtomicCreateErrorNamesTheFile(t *testing.T) {
	p := filepath.Join("/proc", "haven-test", "x.json")
	err := WriteAtomic(p, []byte("x"), 0o600)
	if err == nil {
		t.Fatal("a write under /proc succeeded")
	}
	if want := "write " + p + ": mkdir /proc/haven-test: "; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %q, want %q and the cause", err, want)
	}
}
