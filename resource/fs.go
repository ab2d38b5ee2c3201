package resource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"haven/config"
	"haven/dataset"
)

const (
	// fsKillGrace is how long force_unmount gives the holders of a
	// filesystem between SIGTERM and SIGKILL.
	fsKillGrace = 5 * time.Second
	// fsKillWait is how long it waits for the SIGKILLed holders to vanish.
	fsKillWait = 2 * time.Second
	// fsUmountTries bounds the unmounts of one stop (a device mounted
	// several times on the mount point, holders that come back).
	fsUmountTries = 4
)

// fsMount mounts a filesystem: `mount -t type [-o mnt_opt] dev mnt` and
// `umount mnt`, with util-linux. Its status is read in the mount table of
// the daemon's mount namespace (/proc/self/mountinfo).
type fsMount struct {
	rid     string
	env     Env
	dev     string
	mnt     string
	fsType  string
	opts    string
	force   bool // force_unmount
	timeout time.Duration

	// proc is the /proc the holders are searched in; grace and killWait
	// are fsKillGrace and fsKillWait (shortened by the tests).
	proc     string
	grace    time.Duration
	killWait time.Duration

	// probing is set while a reading of the mount state runs: one that
	// blocks (a stat of a hung NFS mount) is abandoned at the timeout, and
	// no second one is started while it is stuck.
	probing atomic.Bool
	// read is state (replaced by the tests).
	read func() (fsState, devIdent, error)
}

func newFS(rc config.ResourceConfig, env Env) (*fsMount, error) {
	switch {
	case strings.TrimSpace(rc.Dev) == "":
		return nil, fmt.Errorf("%s: dev is required", rc.RID)
	case strings.TrimSpace(rc.FSType) == "":
		return nil, fmt.Errorf("%s: type is required", rc.RID)
	case !filepath.IsAbs(rc.Mnt) || filepath.Clean(rc.Mnt) == "/":
		return nil, fmt.Errorf("%s: mnt %q is not an absolute path other than /", rc.RID, rc.Mnt)
	}
	p := &fsMount{rid: rc.RID, env: env, dev: rc.Dev, mnt: filepath.Clean(rc.Mnt), fsType: rc.FSType,
		opts: rc.MntOpt, force: rc.ForceUnmount, timeout: timeoutOf(rc),
		proc: "/proc", grace: fsKillGrace, killWait: fsKillWait}
	p.read = p.state
	return p, nil
}

func (p *fsMount) RID() string { return p.rid }

// Label is "DEV@MNT", e.g. "/dev/sdb1@/srv/data".
func (p *fsMount) Label() string { return p.dev + "@" + p.mnt }

// devIdent is what dev designates, to recognise it in the mount table.
type devIdent struct {
	// path is dev with its symlinks resolved (/dev/disk/by-uuid/X is
	// /dev/sdb1), or dev as written when it is not a path (tmpfs,
	// server:/export).
	path string
	// nums are the device numbers of the block device, or of the loop
	// devices an image file is attached to.
	nums []devNum
	// device: dev is a block device or an image file, which must not be
	// mounted twice on the node.
	device  bool
	missing error // the path does not exist
	dir     bool  // the path is a directory (a bind mount: not supported)
}

// ident resolves dev. UUID=X and LABEL=X name /dev/disk/by-uuid/X and
// /dev/disk/by-label/X.
func (p *fsMount) ident() devIdent {
	dev := p.dev
	if v, ok := strings.CutPrefix(dev, "UUID="); ok {
		dev = "/dev/disk/by-uuid/" + v
	} else if v, ok := strings.CutPrefix(dev, "LABEL="); ok {
		dev = "/dev/disk/by-label/" + v
	}
	if !filepath.IsAbs(dev) {
		return devIdent{path: dev}
	}
	id := devIdent{path: filepath.Clean(dev)}
	if r, err := filepath.EvalSymlinks(dev); err == nil {
		id.path = r
	}
	var st syscall.Stat_t
	if err := syscall.Stat(id.path, &st); err != nil {
		id.missing = &os.PathError{Op: "stat", Path: p.dev, Err: err}
		id.device = true // a device not there yet: the start will say so
		return id
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		id.nums, id.device = []devNum{devOf(uint64(st.Rdev))}, true
	case syscall.S_IFREG:
		id.nums, id.device = loopDevsOf(id.path, &st), true
	case syscall.S_IFDIR:
		id.dir = true
	}
	return id
}

// match recognises a mount of the device: by device number, else by its
// source, symlinks resolved.
func (id devIdent) match(e mountEntry) bool {
	for _, n := range id.nums {
		if e.dev == n {
			return true
		}
	}
	if e.source == id.path {
		return true
	}
	if strings.HasPrefix(e.source, "/") && strings.HasPrefix(id.path, "/") {
		if r, err := filepath.EvalSymlinks(e.source); err == nil && r == id.path {
			return true
		}
	}
	return false
}

// mntPath is mnt with its symlinks resolved, as the mount table shows it.
func (p *fsMount) mntPath() string {
	if r, err := filepath.EvalSymlinks(p.mnt); err == nil {
		return r
	}
	return p.mnt
}

// errProbeStuck is the error of a state reading while an abandoned one is
// still blocked.
var errProbeStuck = errors.New("a previous reading of the mount state is still blocked (a hung filesystem?)")

// stateCtx is state, given up when ctx ends or after the resource's
// timeout: the blocked reading is left behind, and until it returns the
// next ones fail at once with errProbeStuck.
func (p *fsMount) stateCtx(ctx context.Context) (fsState, devIdent, error) {
	if !p.probing.CompareAndSwap(false, true) {
		return fsState{}, devIdent{}, errProbeStuck
	}
	type result struct {
		st  fsState
		id  devIdent
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, id, err := p.read()
		p.probing.Store(false) // before the answer: the caller may read again at once
		ch <- result{st, id, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	select {
	case r := <-ch:
		return r.st, r.id, r.err
	case <-ctx.Done():
		return fsState{}, devIdent{}, fmt.Errorf("reading the mount state of %s and %s: %s (a hung filesystem?)", p.dev, p.mnt, p.ended(ctx))
	}
}

// state reads the mount table and resolves dev and mnt.
func (p *fsMount) state() (fsState, devIdent, error) {
	entries, err := readMountinfo()
	if err != nil {
		return fsState{}, devIdent{}, err
	}
	id := p.ident()
	return evalState(entries, p.mntPath(), id.match), id, nil
}

// Status is up when dev is the filesystem mounted on mnt; warn when
// another one is mounted there (or the mount table cannot be read); down
// otherwise, with where dev is mounted if it is mounted elsewhere.
func (p *fsMount) Status(ctx context.Context) (dataset.Status, string) {
	st, id, err := p.stateCtx(ctx)
	switch {
	case err != nil:
		return dataset.StatusWarn, err.Error()
	case st.ours:
		return dataset.StatusUp, ""
	case st.top != nil:
		return dataset.StatusWarn, fmt.Sprintf("%s holds %s (%s), not %s", p.mnt, st.top.source, st.top.fsType, p.dev)
	case id.device && len(st.elsewhere) > 0:
		return dataset.StatusDown, fmt.Sprintf("%s is mounted on %s, not on %s", p.dev, strings.Join(st.elsewhere, ", "), p.mnt)
	case id.missing != nil:
		return dataset.StatusDown, id.missing.Error()
	case id.dir:
		return dataset.StatusDown, errBindMount(p.dev).Error()
	}
	return dataset.StatusDown, ""
}

func errBindMount(dev string) error {
	return fmt.Errorf("dev %s is a directory: bind mounts are not supported", dev)
}

// Start mounts dev on mnt, creating mnt (and its parents, mode 0755) when
// missing. It does nothing when dev is already mounted there, and refuses
// when another filesystem is mounted on mnt or when dev (a block device or
// an image) is already mounted elsewhere on the node.
func (p *fsMount) Start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	st, id, err := p.stateCtx(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", p.rid, err)
	case st.ours:
		p.env.Log(p.rid, p.dev+" is already mounted on "+p.mnt)
		return nil
	case st.top != nil:
		return fmt.Errorf("%s: %s already holds %s (%s): refusing to mount %s over it", p.rid, p.mnt, st.top.source, st.top.fsType, p.dev)
	case id.device && len(st.elsewhere) > 0:
		return fmt.Errorf("%s: %s is already mounted on %s: refusing to mount it on %s too", p.rid, p.dev, strings.Join(st.elsewhere, ", "), p.mnt)
	case id.missing != nil:
		return fmt.Errorf("%s: %w", p.rid, id.missing)
	case id.dir:
		return fmt.Errorf("%s: %w", p.rid, errBindMount(p.dev))
	}
	if fi, err := os.Stat(p.mnt); errors.Is(err, os.ErrNotExist) {
		p.env.Log(p.rid, "create the mount point "+p.mnt)
		if err := os.MkdirAll(p.mnt, 0o755); err != nil {
			return fmt.Errorf("%s: %w", p.rid, err)
		}
	} else if err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("%s: mount point %s is not a directory", p.rid, p.mnt)
	}
	args := []string{"-t", p.fsType}
	if p.opts != "" {
		args = append(args, "-o", p.opts)
	}
	args = append(args, p.dev, p.mnt)
	p.env.Log(p.rid, "mount "+strings.Join(args, " "))
	if err := p.command(ctx, "mount", args...); err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	if st, _, err := p.stateCtx(ctx); err == nil && !st.ours {
		return fmt.Errorf("%s: mount said yes but %s is not seen on %s in /proc/self/mountinfo", p.rid, p.dev, p.mnt)
	}
	return nil
}

// Stop unmounts mnt when dev is mounted there; when it is not (or another
// filesystem is mounted there, left alone) there is nothing to do. When the
// unmount fails because processes use the filesystem, the error names
// them, or with force_unmount they are killed (SIGTERM, SIGKILL after
// fsKillGrace) and the unmount is tried again. The whole stop, like the
// whole start, is bounded by the resource's timeout.
func (p *fsMount) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	for try := 0; ; try++ {
		st, _, err := p.stateCtx(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", p.rid, err)
		}
		if !st.ours {
			if try == 0 && st.top != nil {
				p.env.Log(p.rid, fmt.Sprintf("%s holds %s, not %s: left alone", p.mnt, st.top.source, p.dev))
			}
			return nil
		}
		if try == fsUmountTries {
			return fmt.Errorf("%s: %s is still mounted on %s after %d unmounts", p.rid, p.dev, p.mnt, try)
		}
		p.env.Log(p.rid, "umount "+p.mnt)
		uerr := p.command(ctx, "umount", p.mnt)
		if uerr == nil {
			continue // mounted twice? look again
		}
		hs, herr := p.holders(st.top.dev)
		switch {
		case herr != nil:
			return fmt.Errorf("%s: %w (and the holders could not be listed: %v)", p.rid, uerr, herr)
		case len(hs) == 0:
			return fmt.Errorf("%s: %w", p.rid, uerr)
		case !p.force:
			return fmt.Errorf("%s: %s is busy, held by %s: stop them first, or set force_unmount = true", p.rid, p.mnt, describeHolders(hs))
		}
		if err := p.kill(ctx, st.top.dev, hs); err != nil {
			return fmt.Errorf("%s: %w", p.rid, err)
		}
	}
}

// holders lists the processes of the daemon's mount namespace that use the
// filesystem of device dev.
func (p *fsMount) holders(dev devNum) ([]holder, error) {
	ns, err := os.Readlink(filepath.Join(p.proc, "self", "ns", "mnt"))
	if err != nil {
		ns = "" // no namespaces: every process
	}
	return findHolders(p.proc, dev, ns, os.Getpid())
}

// kill sends SIGTERM to hs, waits up to the grace for the holders of dev to
// be gone, SIGKILLs those left and waits for them to vanish.
func (p *fsMount) kill(ctx context.Context, dev devNum, hs []holder) error {
	signal := func(hs []holder, sig syscall.Signal, name string) {
		for _, h := range hs {
			p.env.Log(p.rid, fmt.Sprintf("force_unmount: %s %s", name, h))
			_ = syscall.Kill(h.pid, sig)
		}
	}
	wait := func(d time.Duration) ([]holder, error) {
		deadline := time.Now().Add(d)
		for {
			left, err := p.holders(dev)
			if err != nil || len(left) == 0 || time.Now().After(deadline) {
				return left, err
			}
			select {
			case <-ctx.Done():
				return left, fmt.Errorf("%s while %s was still held by %s", p.ended(ctx), p.mnt, describeHolders(left))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	signal(hs, syscall.SIGTERM, "SIGTERM")
	left, err := wait(p.grace)
	if err != nil || len(left) == 0 {
		return err
	}
	signal(left, syscall.SIGKILL, "SIGKILL")
	left, err = wait(p.killWait)
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("%s still busy after SIGKILL, held by %s", p.mnt, describeHolders(left))
	}
	return err
}

// ended says why ctx ended.
func (p *fsMount) ended(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timed out after " + p.timeout.String()
	}
	return "canceled"
}

// command runs mount or umount, killed when ctx (bounded by the
// resource's timeout) ends.
func (p *fsMount) command(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if ctx.Err() != nil {
			msg = p.ended(ctx)
		} else if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), msg)
	}
	return nil
}
