package guard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"haven/internal/paths"
)

// ProgramName is the guard's own program, installed beside nodemgr (make
// build's bin/, make install's BINDIR, the package's /usr/bin): small, so
// that the whole of it can be locked in memory (cmd/haven-guard).
const ProgramName = "haven-guard"

// Program is the guard's program beside the executable exe ("": this
// process's, as the daemon and nodemgr find it), or an error that names
// it when it is missing or not an executable file.
func Program(exe string) (string, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("the node guard's program: %w", err)
		}
	}
	path := filepath.Join(filepath.Dir(exe), ProgramName)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, fmt.Errorf("the node guard's program %s is missing: it is installed beside %s (make build, make install, the package); node.guard = false runs the node without a guard", path, filepath.Base(exe))
	case err != nil:
		return path, fmt.Errorf("the node guard's program: %w", err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return path, fmt.Errorf("the node guard's program %s is not an executable file (%s)", path, fi.Mode())
	}
	return path, nil
}

// Process is the guard's process (haven-guard) on the layout p: one
// processor, its memory locked, the last the OOM killer picks, SIGHUP and
// SIGPIPE ignored; SIGTERM and SIGINT stop it (a host going down). It
// returns ErrRunning when another guard holds the root's lock.
func Process(ctx context.Context, p paths.Paths) error {
	runtime.GOMAXPROCS(1)
	lg := log.New(os.Stderr, "guard: ", log.LstdFlags|log.Lmicroseconds)
	if err := lockMemory(); err != nil {
		lg.Printf("lock the guard's memory: %v: it may be paged out", err)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0); err != nil {
		lg.Printf("oom_score_adj: %v", err)
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, dir := range []string{p.Run, p.Var} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return Run(ctx, Config{Socket: p.GuardSocket(), Lock: p.GuardLock(), Record: p.GuardRecord(), Log: lg})
}

// lockMemory keeps the guard in memory, so that it needs no disk to act
// (a hung disk, a host under memory pressure): every page it touches is
// locked as it comes (MCL_ONFAULT: the runtime's reserved heap is not
// faulted in whole, 150 MB instead of 16), and its program's pages are
// faulted in and locked at once (the code that acts runs once, late).
func lockMemory() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
		return fmt.Errorf("mlockall: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[5] != exe {
			continue
		}
		var start, end uintptr
		if _, err := fmt.Sscanf(f[0], "%x-%x", &start, &end); err != nil || end <= start {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MLOCK, start, end-start, 0); e != 0 {
			return fmt.Errorf("mlock %s: %w", f[0], e)
		}
	}
	return nil
}
