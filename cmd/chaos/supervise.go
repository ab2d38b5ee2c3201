package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"haven/test/chaos"
)

// childEnv names, in the environment of the child that runs the round or
// the bed, the file in which it records what it makes (chaos.RecordMadeTo).
const childEnv = "HAVEN_CHAOS_RECORD"

// supervise runs this command again as a child with the same arguments,
// passes it the signals this process receives, and once it ended (by its
// own exit, a panic, kill -9) removes whatever it recorded and left
// behind: network namespaces with their processes, tmpfs mounts. It exits
// with the child's status (128 + the signal when the child was killed).
func supervise(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	rec, err := os.CreateTemp("", "haven-chaos-made-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	rec.Close()
	defer os.Remove(rec.Name())
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), childEnv+"="+rec.Name())
	// its own process group: a Ctrl-C reaches the child once, through
	// this process, not twice (which would mean "stop at once")
	// this process; and when this process is killed, the child gets a
	// SIGTERM: its abort removes the cluster itself
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sig:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case err != nil:
		fmt.Fprintln(os.Stderr, "chaos:", err)
		code = 1
	}
	removed, errs := chaos.RemoveMade(rec.Name())
	if len(removed) > 0 {
		fmt.Fprintf(os.Stderr, "chaos: the round ended without removing its bed (exit %d): removed %d things it left (%s ...)\n", code, len(removed), removed[0])
		if code == 0 {
			code = 1
		}
	}
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "chaos: could not remove:", e)
	}
	return code
}

// recordIfChild starts the record when this process is the supervised
// child; it reports whether it is.
func recordIfChild() bool {
	path := os.Getenv(childEnv)
	if path == "" {
		return false
	}
	if err := chaos.RecordMadeTo(filepath.Clean(path)); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: record:", err)
	}
	return true
}
