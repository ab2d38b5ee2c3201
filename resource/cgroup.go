package resource

import (
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"haven/internal/cgroup"
)

// Every command of an app or ocf resource (start, stop, check, info) runs
// in the cgroup of its resource, a leaf of its instance's cgroup
// (Env.Cgroup): the child is cloned into it (clone3 with
// CLONE_INTO_CGROUP), so that it never runs a moment outside, and what it
// leaves behind stays there whatever it does (fork twice, setsid). A stop
// that ends kills what is left in the group (Set.Stop, Set.StopOne), and
// the node guard kills the instance's group when the daemon's lease runs
// out. Without a cgroup (Env.Cgroup empty: no usable cgroup v2 hierarchy)
// a command runs in a process group of its own, as before, and the start
// commands' groups are what the guard kills (StartGroups).

// stopKillWait bounds how long a stop waits for the processes killed
// after its commands to be gone.
const stopKillWait = 5 * time.Second

// cgLeaf is the cgroup the commands of one resource run in.
type cgLeaf struct {
	dir string
	mu  sync.RWMutex // held for reading by a start, for writing by reopen
	fd  int          // open on dir (O_PATH), -1 until the first command
}

func newLeaf(instance, rid string) *cgLeaf {
	if instance == "" {
		return nil
	}
	return &cgLeaf{dir: filepath.Join(instance, cgroup.Name(rid)), fd: -1}
}

// start runs fork with the leaf's descriptor (made and opened at the
// first command); a group removed meanwhile (a stop or the guard killed
// it: clone3 fails, with ENOENT or ENODEV) is made again and the command
// started once more.
func (l *cgLeaf) start(fork func(fd int) (int, error)) (int, error) {
	fd, err := l.open(-1)
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", l.dir, err)
	}
	l.mu.RLock()
	pid, err := fork(fd)
	l.mu.RUnlock()
	if err != syscall.ENODEV && err != syscall.ENOENT || err == syscall.ENOENT && isDir(l.dir) {
		return pid, err // ENOENT with the group there: the program is missing
	}
	if fd, err = l.open(fd); err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", l.dir, err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return fork(fd)
}

// open is the leaf's descriptor; stale, when not -1, is one that named a
// removed group: it is replaced.
func (l *cgLeaf) open(stale int) (int, error) {
	l.mu.RLock()
	fd := l.fd
	l.mu.RUnlock()
	if fd >= 0 && fd != stale {
		return fd, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd >= 0 && l.fd != stale {
		return l.fd, nil // another command did it
	}
	fd, err := cgroup.Open(l.dir)
	if err != nil {
		return -1, err
	}
	if l.fd >= 0 {
		syscall.Close(l.fd)
	}
	l.fd = fd
	return fd, nil
}

// killLeft kills what is left in group dir after a stop that ended well,
// and logs it; it is nothing when the group is empty or there is none.
func killLeft(dir string, log func(string)) error {
	if dir == "" {
		return nil
	}
	pids, err := cgroup.Procs(dir)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if len(pids) == 0 {
		return nil
	}
	log(fmt.Sprintf("stop: %d processes left in the cgroup after the stop: killed (SIGKILL to the cgroup)", len(pids)))
	empty, err := cgroup.End(dir, stopKillWait)
	if err != nil {
		return fmt.Errorf("kill the processes left in cgroup %s: %w", dir, err)
	}
	if !empty {
		return fmt.Errorf("processes still in cgroup %s %s after SIGKILL", dir, stopKillWait)
	}
	return nil
}

// Ends is what the node guard ends of an instance besides its cgroup:
// the process groups of its resources' last starts (used without a
// cgroup), its ip resources' addresses and its fs resources' mount
// points.
type Ends struct {
	Groups []int
	Addrs  []EndAddr
	Mounts []string
}

// EndAddr is an address of an ip resource: Prefix ("10.0.0.5/24") on
// device Dev.
type EndAddr struct{ Dev, Prefix string }

// Ends lists what the guard ends of the instance (the disabled resources
// left out).
func (s *Set) Ends() Ends {
	var e Ends
	for _, it := range s.items {
		if it.rc.Disable {
			continue
		}
		switch d := it.drv.(type) {
		case *ipAddr:
			e.Addrs = append(e.Addrs, EndAddr{Dev: d.dev, Prefix: d.prefix()})
		case *fsMount:
			e.Mounts = append(e.Mounts, d.mnt)
		}
		if g, ok := it.drv.(startGrouped); ok && s.env.Cgroup == "" {
			if pg := g.StartGroup(); pg > 1 {
				e.Groups = append(e.Groups, pg)
			}
		}
	}
	return e
}

// tracked is what a driver that runs commands knows of their processes:
// the resource's cgroup, and the process group of its last start (which
// the processes it left behind are in unless they left it: what the
// guard kills without a cgroup).
type tracked struct {
	cg *cgLeaf // nil: no cgroup

	mu         sync.Mutex
	startGroup int
}

// started records the process of a start command (0: none ran).
func (t *tracked) started(pid int) {
	if pid > 0 {
		t.mu.Lock()
		t.startGroup = pid
		t.mu.Unlock()
	}
}

// StartGroup is the process group of the last start, 0 if none ran.
func (t *tracked) StartGroup() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.startGroup
}

// Cgroup is the resource's cgroup ("" for none).
func (t *tracked) Cgroup() string {
	if t.cg == nil {
		return ""
	}
	return t.cg.dir
}
