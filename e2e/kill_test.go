package e2e

import (
	"os/exec"
	"syscall"
)

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func execQuiet(name string, args ...string) { exec.Command(name, args...).Run() }
