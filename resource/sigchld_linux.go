package resource

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// QuietChildExits gives SIGCHLD its default disposition in this process:
// the exit of a command then wakes no thread of it. The Go runtime catches
// every signal, SIGCHLD included, though it does nothing with it unless a
// program asks (signal.Notify, which Haven never does for SIGCHLD): with
// the runtime's handler, each check's exit woke a sleeping thread of the
// daemon to run it, a tenth of the daemon's CPU with 200 services on a
// quiet host (docs/benchmarks.md). The default disposition is
// not SIG_IGN: the children still become zombies until run reaps them and
// reads their exit status. The daemon's commands start with it as they
// would from a shell.
func QuietChildExits() error {
	var act struct{ handler, flags, restorer, mask uint64 } // the kernel's sigaction: SIG_DFL
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(syscall.SIGCHLD), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return os.NewSyscallError("rt_sigaction", e)
	}
	return nil
}
