package daemon

import (
	"os"
	"strconv"
	"syscall"
)

// closeInheritedOnExec marks every descriptor above stderr close-on-exec.
// Go opens its own files close-on-exec, but a descriptor the daemon
// inherited without it (a shell's `3>file`, a supervisor's socket or
// pipe) would otherwise reach every app command and hook the daemon runs:
// os/exec passes stdin, stdout and stderr on purpose and leaves the rest
// to the flag. The daemon itself keeps them open (it uses none). Called
// first thing at start, before the daemon opens anything or runs a
// command.
func closeInheritedOnExec() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// the directory's own descriptor is closed by now: EBADF
		syscall.CloseOnExec(fd)
	}
	return nil
}
