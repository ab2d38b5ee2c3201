// Package cgroup is the little of the cgroup v2 file system Haven uses to
// track the processes of a service instance: find the v2 mount, make a
// group, start a process in it, tell whether anything still runs in it
// ("populated" in cgroup.events), list it, kill it whole (cgroup.kill) and
// remove it. A process cannot leave a group by forking twice or by
// setsid(2): whatever a command leaves behind stays in its group, so a
// stop, or the node guard, ends all of it.
//
// No controller is enabled: only the core files (cgroup.procs,
// cgroup.events, cgroup.kill) are used, so a group may hold processes and
// child groups at once, and nothing is limited or accounted.
//
// Where the groups live (Setup): under systemd, below the daemon's own
// unit (the unit must have Delegate=yes), the daemon moving itself into
// the leaf "daemon" of its unit; otherwise under "haven" at the top of the
// v2 mount. Below that, one directory per node, named by the node and a
// hash of its root, so that several nodes on one host (tests, a test bed)
// never share a group.
//
// A leaf package: it imports nothing of Haven.
package cgroup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is returned by Setup when no cgroup v2 hierarchy can be
// used (no cgroup2 mount, or one this process may not write): the callers
// fall back to process groups.
var ErrUnavailable = errors.New("no usable cgroup v2 hierarchy")

// Mount is where the cgroup v2 hierarchy is mounted ("" when it is not),
// read from /proc/self/mountinfo: /sys/fs/cgroup on a pure v2 host,
// /sys/fs/cgroup/unified on a hybrid one.
func Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	return mountFrom(b), nil
}

// mountFrom is the first cgroup2 mount point of a mountinfo text.
func mountFrom(mountinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - fstype source superoptions
		f := strings.Fields(sc.Text())
		sep := -1
		for i, s := range f {
			if s == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		return unescapeMount(f[4])
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Self is the v2 group of this process, relative to the mount ("/" at
// the top), from the "0::" line of /proc/self/cgroup.
func Self() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	return selfFrom(b)
}

func selfFrom(b []byte) (string, error) {
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Clean("/" + p), nil
		}
	}
	return "", errors.New("/proc/self/cgroup: no cgroup v2 line")
}

// DaemonLeaf is the leaf of a systemd unit the daemon moves itself into,
// so that the unit's group holds no process of its own next to the
// groups made below it (cgroup v2's rule once controllers are delegated).
const DaemonLeaf = "daemon"

// base is where a process in group self (relative to the mount) makes
// its groups, and the leaf it moves itself into first ("" for none):
// below its own systemd unit (a group named *.service, or the daemon
// leaf of one: a daemon restarted by hand from there), else "/haven".
func base(self string) (dir, leaf string) {
	unit := self
	if filepath.Base(unit) == DaemonLeaf {
		unit = filepath.Dir(unit)
	}
	if strings.HasSuffix(filepath.Base(unit), ".service") {
		return unit, filepath.Join(unit, DaemonLeaf)
	}
	return "/haven", ""
}

// NodeDir is the name of a node's directory below the base: the node's
// name and a hash of its root, so that two nodes of one host differ even
// when their names are the same (two test clusters).
func NodeDir(name, root string) string { return name + "-" + RootHash(root) }

// RootHash is the part of a node's directory that names its root.
func RootHash(root string) string {
	h := sha256.Sum256([]byte(root))
	return hex.EncodeToString(h[:4])
}

// NodeDirs are the directories of every node of root found under the
// base a process outside systemd uses ("/haven" of the mount): what a
// test harness removes after it killed a node's processes.
func NodeDirs(root string) []string {
	mnt, err := Mount()
	if err != nil || mnt == "" {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(mnt, "haven", "*-"+RootHash(root)))
	return m
}

// Tree is the groups of one node.
type Tree struct {
	// Dir is the node's directory (absolute, in the mounted hierarchy).
	Dir string
}

// Setup finds the node's tree for node name on root (its --root, "" for
// the system layout) and makes its directory; under a systemd unit it
// first moves this process into the unit's daemon leaf. When no cgroup2
// hierarchy is mounted in this process's mount namespace (a cgroup v1
// host, or a namespace of its own such as `ip netns exec` makes, with a
// sysfs of its own), it mounts one at private (when not ""): the same
// hierarchy, seen from there. ErrUnavailable (wrapped) when no cgroup v2
// hierarchy can be used.
func Setup(name, root, private string) (*Tree, error) {
	mnt, err := Mount()
	if (err != nil || mnt == "") && private != "" {
		mnt, err = mountPrivate(private)
	}
	if err != nil || mnt == "" {
		return nil, fmt.Errorf("%w: no cgroup2 mount (%v)", ErrUnavailable, err)
	}
	self, err := Self()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	dir, leaf := base(self)
	if leaf != "" && leaf != self {
		if err := Enter(filepath.Join(mnt, leaf), os.Getpid()); err != nil {
			return nil, fmt.Errorf("%w: move the daemon into %s (does the unit have Delegate=yes?): %v", ErrUnavailable, leaf, err)
		}
	}
	t := &Tree{Dir: filepath.Join(mnt, dir, NodeDir(name, root))}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat(filepath.Join(t.Dir, "cgroup.events")); err != nil {
		return nil, fmt.Errorf("%w: %s is no cgroup v2 group: %v", ErrUnavailable, t.Dir, err)
	}
	return t, nil
}

// Service is the group of a service's instance on this node.
func (t *Tree) Service(svc string) string { return filepath.Join(t.Dir, "services", Name(svc)) }

// Guard is the group of the node's guard process.
func (t *Tree) Guard() string { return filepath.Join(t.Dir, "guard") }

// Name makes s a safe directory name: "/" and a leading "." (".", "..",
// a hidden name) are replaced.
func Name(s string) string {
	s = strings.ReplaceAll(s, "/", "_")
	if s == "" || s[0] == '.' {
		s = "_" + s
	}
	return s
}

// Enter makes group dir (and its parents) and moves process pid into it.
func Enter(dir string, pid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid))
}

// Open makes group dir (and its parents) when missing and opens it for
// SysProcAttr.CgroupFD (clone3's CLONE_INTO_CGROUP).
func Open(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return -1, err
		}
		fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// Populated reports whether a process runs in group dir or below it. A
// group that does not exist is not populated.
func Populated(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return false, nil
		}
	}
	if err != nil {
		return false, err
	}
	return populatedFrom(b), nil
}

func populatedFrom(events []byte) bool {
	for _, l := range strings.Split(string(events), "\n") {
		if v, ok := strings.CutPrefix(l, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

// Procs are the processes in group dir and below it.
func Procs(dir string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if !e.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

// Kill sends SIGKILL to every process of group dir and below it, at once
// (cgroup.kill: no process can fork out of the way). On a kernel without
// cgroup.kill (before 5.14) the group is frozen (cgroup.freeze: no
// process of it runs or forks), each process listed gets SIGKILL (a fatal
// signal ends a frozen process), and the group is thawed. A group that
// does not exist has nothing to kill.
//
// A group killed with cgroup.kill must not be used again: on the kernels
// tried (6.18), a process later cloned into it from another group
// (CLONE_INTO_CGROUP) is killed at birth, as the kill's sequence number
// of the group differs from the one clone3 reads. End removes it after
// the kill; the next command makes a new one.
func Kill(dir string) error {
	err := writeFile(filepath.Join(dir, "cgroup.kill"), "1")
	if err == nil || errors.Is(err, os.ErrNotExist) && !exists(dir) {
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	freeze := filepath.Join(dir, "cgroup.freeze")
	if err := writeFile(freeze, "1"); err != nil {
		return err
	}
	defer writeFile(freeze, "0")
	pids, err := Procs(dir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return err
}

// WaitEmpty waits until group dir is not populated, at most bound; it
// reports whether it is empty. It wakes on the kernel's notice of a change
// of cgroup.events, and looks again every 10 ms in any case.
func WaitEmpty(dir string, bound time.Duration) (bool, error) {
	deadline := time.Now().Add(bound)
	f, err := os.Open(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !exists(dir) {
			return true, nil
		}
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 256)
	for {
		n, err := f.ReadAt(buf, 0)
		if err != nil && n == 0 {
			return false, err
		}
		if !populatedFrom(buf[:n]) {
			return true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		wait := min(left, 10*time.Millisecond)
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		_, _ = unix.Poll(fds, int(wait.Milliseconds())+1)
	}
}

// KillWait kills group dir (Kill) and waits for it to empty (WaitEmpty).
func KillWait(dir string, bound time.Duration) (bool, error) {
	if err := Kill(dir); err != nil {
		return false, err
	}
	return WaitEmpty(dir, bound)
}

// End kills group dir, waits for it to empty (at most bound) and removes
// it with the groups below it (Kill says why a killed group is not kept).
// It reports whether the group emptied.
func End(dir string, bound time.Duration) (bool, error) {
	empty, err := KillWait(dir, bound)
	if err != nil || !empty {
		return empty, err
	}
	return true, Remove(dir)
}

// Remove removes group dir and the groups below it, deepest first; a
// group that still holds a process stays (EBUSY, returned).
func Remove(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && err != syscall.ENOENT {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: dirs[i], Err: err})
		}
	}
	return errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeFile writes s to an existing cgroup file (never creates one).
func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mountPrivate mounts the cgroup2 hierarchy at dir (made if missing).
func mountPrivate(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := unix.Mount("cgroup2", dir, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return "", fmt.Errorf("mount cgroup2 on %s: %w", dir, err)
	}
	return dir, nil
}
