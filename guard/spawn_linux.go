package guard

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"haven/internal/cgroup"
)

// Spawn starts a guard, detached: exe with args (`haven-guard --root R`),
// in a session of its own (setsid: not killed with the daemon's
// process group or by a hang-up), its input /dev/null and its output
// appended to logPath, with GOMAXPROCS=1, cloned into cgroup dir cg when
// not "" (a group of its own, apart from the services' and the daemon's).
// It returns once the guard answers on socket, at most wait later.
func Spawn(exe string, args []string, logPath, cg, socket string, wait time.Duration) (int, error) {
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if cg != "" {
		fd, err := cgroup.Open(cg)
		if err != nil {
			return 0, fmt.Errorf("the guard's cgroup: %w", err)
		}
		defer syscall.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped if it exits while this process runs
	c := NewClient(socket, 200*time.Millisecond)
	defer c.Close()
	deadline := time.Now().Add(wait)
	for {
		if _, err := c.Do(Request{Op: OpStatus}); err == nil {
			return cmd.Process.Pid, nil
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("the guard exited at its start (%v): see %s", err, logPath)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the guard did not answer on %s within %s (see %s)", socket, wait, logPath)
		}
	}
}
