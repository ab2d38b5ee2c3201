package cliutil

import (
	"os"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	unlock := 0
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

func TestIsTerminal(t *testing.T) {
	_, slave := openPTY(t)
	if !IsTerminal(slave) {
		t.Fatal("a pseudo-terminal is not seen as a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Fatal("a pipe is seen as a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a file is seen as a terminal")
	}
}

func TestWantColorHonoursTerminalAndNoColor(t *testing.T) {
	cases := []struct {
		set, flag bool
		noColor   string
		tty, want bool
	}{
		{false, false, "", true, true},   // a terminal: colours
		{false, false, "", false, false}, // a pipe or a file: none
		{false, false, "1", true, false}, // NO_COLOR present and not empty
		{false, false, "0", true, false}, // whatever its value
		{false, false, "", true, true},   // present but empty: ignored
		{true, true, "1", false, true},   // --color: asked for here
		{true, false, "", true, false},   // --color=false
	}
	for _, c := range cases {
		if got := WantColor(c.set, c.flag, c.noColor, c.tty); got != c.want {
			t.Errorf("WantColor(set %v, flag %v, NO_COLOR %q, tty %v) = %v, want %v", c.set, c.flag, c.noColor, c.tty, got, c.want)
		}
	}
}
