package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// Only a meaningful change of the load or memory is published: 0.1 and a
// tenth of the load, 2 points of memory.
func TestSysinfoChanged(t *testing.T) {
	for _, c := range []struct {
		pubLoad, load, pubMem, mem float64
		want                       bool
	}{
		{0.5, 0.55, 50, 50, false},
		{0.5, 0.6, 50, 50, true},
		{8, 8.5, 50, 50, false},
		{8, 8.8, 50, 50, true},
		{50, 46, 50, 50, false},
		{50, 45, 50, 50, true},
		{1, 1, 50, 51.5, false},
		{1, 1, 50, 48, true},
	} {
		if got := sysinfoChanged(c.pubLoad, c.load, c.pubMem, c.mem); got != c.want {
			t.Errorf("load %v -> %v, mem %v -> %v: changed %v, want %v", c.pubLoad, c.load, c.pubMem, c.mem, got, c.want)
		}
	}
}

// The load and memory come from the files as the kernel writes them; a
// file that cannot be read gives 0; the files stay open between reads and
// each read sees the file anew.
func TestSysinfoParse(t *testing.T) {
	if got := parseLoad15([]byte("0.52 0.58 1.25 2/312 4021\n")); got != 1.25 {
		t.Errorf("load15 %v, want 1.25", got)
	}
	if got := parseLoad15([]byte("0.52 0.58")); got != 0 {
		t.Errorf("load15 of a short file %v, want 0", got)
	}
	mem := "MemTotal:        8000000 kB\nMemFree:          500000 kB\nMemAvailable:    2000000 kB\nBuffers:  1 kB\n"
	if got := parseMemAvailPct([]byte(mem)); got != 25 {
		t.Errorf("mem %v, want 25", got)
	}
	if got := parseMemAvailPct([]byte("MemFree: 5 kB\n")); got != 0 {
		t.Errorf("mem without MemTotal %v, want 0", got)
	}
	// MemAvailable on the last line, no newline after it
	if got := parseMemAvailPct([]byte("MemTotal: 1000 kB\nMemAvailable: 333 kB")); got != 33.3 {
		t.Errorf("mem %v, want 33.3", got)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "loadavg")
	if err := os.WriteFile(p, []byte("0.1 0.2 0.3 1/1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newProcFile(p, 128)
	defer f.close()
	if got := parseLoad15(f.read()); got != 0.3 {
		t.Fatalf("first read %v, want 0.3", got)
	}
	fd := f.fd
	if err := os.WriteFile(p, []byte("0.1 0.2 4.5 1/1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := parseLoad15(f.read()); got != 4.5 || f.fd != fd {
		t.Fatalf("second read %v (fd %d, was %d), want 4.5 from the same descriptor", got, f.fd, fd)
	}
	r := &sysinfoReader{loadavg: newProcFile(filepath.Join(dir, "missing"), 128), meminfo: newProcFile(filepath.Join(dir, "missing"), 512)}
	if l, m := r.load15(), r.memAvailPct(); l != 0 || m != 0 {
		t.Fatalf("missing files: load %v mem %v, want 0 0", l, m)
	}
	real := newSysinfoReader()
	defer real.close()
	if m := real.memAvailPct(); m <= 0 || m > 100 {
		t.Fatalf("this host's available memory %v%%", m)
	}
}
