package guard

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"haven/internal/cgroup"
)

// act ends the kill set: every cgroup killed at once, then the wait for
// them to empty (wait at most in all), the process groups, the addresses,
// the mounts. Nothing in it waits on the daemon, the network or a disk
// beyond the bounded wait (a lazy unmount does not wait for the file
// system).
func act(kill []Target, wait time.Duration) []Ended {
	ended := make([]Ended, len(kill))
	for i, t := range kill {
		e := &ended[i]
		e.Service, e.Cgroup = t.Service, t.Cgroup
		if t.Cgroup != "" {
			pids, _ := cgroup.Procs(t.Cgroup)
			e.Killed = len(pids)
			if err := cgroup.Kill(t.Cgroup); err != nil {
				e.Errors = append(e.Errors, "kill cgroup: "+err.Error())
			}
		}
		for _, g := range t.Groups {
			if g <= 1 {
				continue
			}
			if err := syscall.Kill(-g, syscall.SIGKILL); err == nil {
				e.Groups = append(e.Groups, g)
			} else if err != syscall.ESRCH {
				e.Errors = append(e.Errors, fmt.Sprintf("kill process group %d: %v", g, err))
			}
		}
	}
	deadline := time.Now().Add(wait)
	for i, t := range kill {
		e := &ended[i]
		if t.Cgroup == "" {
			continue
		}
		empty, err := cgroup.WaitEmpty(t.Cgroup, time.Until(deadline))
		e.Empty = empty
		switch {
		case err != nil:
			e.Errors = append(e.Errors, "wait for the cgroup: "+err.Error())
		case empty:
			// a killed group is not used again (cgroup.Kill): the next
			// command makes a new one
			if err := cgroup.Remove(t.Cgroup); err != nil {
				e.Errors = append(e.Errors, "remove the cgroup: "+err.Error())
			}
		}
	}
	for i, t := range kill {
		e := &ended[i]
		for _, a := range t.Addrs {
			removed, err := delAddr(a.Dev, a.Prefix)
			switch {
			case err != nil:
				e.Errors = append(e.Errors, fmt.Sprintf("remove %s from %s: %v", a.Prefix, a.Dev, err))
			case removed:
				e.Addrs = append(e.Addrs, a.Prefix+"@"+a.Dev)
			}
		}
		for _, m := range t.Mounts {
			if n, err := detach(m); err != nil {
				e.Errors = append(e.Errors, fmt.Sprintf("detach %s: %v", m, err))
			} else if n > 0 {
				e.Mounts = append(e.Mounts, m)
			}
		}
	}
	return ended
}

// detach unmounts mount point m lazily (MNT_DETACH: at once, whoever
// still uses it), each mount stacked on it, at most 4; it reports how
// many it detached. Not mounted (EINVAL) or not there is nothing to do.
func detach(m string) (int, error) {
	for n := 0; n < 4; n++ {
		err := unix.Unmount(m, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return n, nil
		default:
			return n, err
		}
	}
	return 4, nil
}
