package daemon

import (
	"fmt"
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
	timeout time.Duration // 0: a file of the tests (HAVEN_WATCHDOG_FILE)
}

// openWatchdog opens and thereby arms the watchdog at path, and checks
// that it is one: a character device that answers the watchdog ioctls
// (/dev/null, /dev/zero, a regular file or a FIFO are refused: none would
// reset the host), whose timeout is below limit (the shortest fence wait,
// when the disk fences this node; 0: no limit). It never blocks (a FIFO
// without a reader would block the open for ever). fileOK accepts a
// regular file instead, which records the pets (HAVEN_WATCHDOG_FILE, for
// the tests: it resets nothing).
func openWatchdog(path string, limit time.Duration, fileOK bool) (*watchdog, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fileOK && st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		w := &watchdog{path: path, f: f}
		if err := w.pet(); err != nil {
			f.Close()
			return nil, err
		}
		return w, nil
	}
	if st.Mode()&os.ModeCharDevice == 0 {
		return nil, fmt.Errorf("not a watchdog device (%s, not a character device): name the watchdog's device, e.g. /dev/watchdog of softdog or of the board's driver", fileKind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	w := &watchdog{path: path, f: f}
	fail := func(err error) (*watchdog, error) {
		// opened: a real watchdog is armed; disarm it before refusing
		w.disarm()
		return nil, err
	}
	if _, err := unix.IoctlGetWatchdogInfo(int(f.Fd())); err != nil {
		return fail(fmt.Errorf("not a watchdog device: the watchdog ioctls fail (%v): name the watchdog's device, e.g. /dev/watchdog of softdog or of the board's driver", err))
	}
	s, err := unix.IoctlGetInt(int(f.Fd()), unix.WDIOC_GETTIMEOUT)
	if err != nil || s <= 0 {
		return fail(fmt.Errorf("the watchdog's timeout cannot be read (%v, %d)", err, s))
	}
	w.timeout = time.Duration(s) * time.Second
	if err := timeoutBelow(w.timeout, limit); err != nil {
		return fail(err)
	}
	if err := w.pet(); err != nil {
		return fail(err)
	}
	return w, nil
}

// timeoutBelow refuses a watchdog timeout at or above limit (0: none).
func timeoutBelow(timeout, limit time.Duration) error {
	if limit > 0 && timeout >= limit {
		return fmt.Errorf("the watchdog's timeout %s is at or above the shortest fence wait %s (2 x hb.disk.timeout + the self-stop deadline): a survivor could count this node fenced before its host is reset; set a shorter timeout (softdog soft_margin, or the driver's option)", timeout, limit)
	}
	return nil
}

// fileKind names a file type that is no character device.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a device"
}

func (w *watchdog) timeoutText() string {
	if w.timeout == 0 {
		return "none (a regular file of the tests: HAVEN_WATCHDOG_FILE)"
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
