package daemon

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchdog is node.watchdog_device: the loop's pulse pets it (sbd.go), a
// clean stop disarms it with the magic close ("V" then close). A daemon
// killed, hung or paused stops petting it, and the kernel (softdog) or
// the hardware resets the host once its timeout passed.
type watchdog struct {
	path    string
	f       *os.File
	timeout time.Duration // 0: unknown (not a watchdog driver: a test file)
}

// openWatchdog opens and thereby arms the watchdog.
func openWatchdog(path string) (*watchdog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	w := &watchdog{path: path, f: f}
	if s, err := unix.IoctlGetInt(int(f.Fd()), unix.WDIOC_GETTIMEOUT); err == nil && s > 0 {
		w.timeout = time.Duration(s) * time.Second
	}
	if err := w.pet(); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *watchdog) timeoutText() string {
	if w.timeout == 0 {
		return "unknown (not a watchdog driver)"
	}
	return w.timeout.String()
}

// pet keeps the host alive for one more timeout.
func (w *watchdog) pet() error {
	_, err := w.f.Write([]byte{0})
	return err
}

// disarm stops the watchdog: the magic character, then close (a driver
// built with nowayout keeps running: the host is then reset after the
// timeout unless a new daemon opens the device first).
func (w *watchdog) disarm() error {
	_, err := w.f.Write([]byte("V"))
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
