package daemon

import (
	"bytes"
	"runtime"
	"strconv"
	"syscall"

	"haven/config"
	"haven/dataset"
)

// The load and memory are read every sysinfoPeriod from /proc/loadavg and
// /proc/meminfo, each kept open and read again from its start (a proc file
// is made anew at each read from offset 0): opening, registering with the
// runtime's poller, reading through a scanner and closing both files was a
// fifteenth of an idle daemon's CPU (docs/benchmarks.md). A read
// that fails closes the file; the next read opens it again.

// procFile is a /proc file kept open.
type procFile struct {
	path string
	fd   int // -1: closed
	buf  []byte
}

func newProcFile(path string, size int) *procFile {
	return &procFile{path: path, fd: -1, buf: make([]byte, size)}
}

// read returns the first len(buf) bytes of the file (nil on error).
func (f *procFile) read() []byte {
	if f.fd < 0 {
		fd, err := syscall.Open(f.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		f.fd = fd
	}
	n, err := syscall.Pread(f.fd, f.buf, 0)
	if err != nil || n <= 0 {
		f.close()
		return nil
	}
	return f.buf[:n]
}

func (f *procFile) close() {
	if f.fd >= 0 {
		syscall.Close(f.fd)
		f.fd = -1
	}
}

// sysinfoReader reads the node's load and available memory.
type sysinfoReader struct {
	loadavg, meminfo *procFile
}

func newSysinfoReader() *sysinfoReader {
	// meminfo's first lines are MemTotal, MemFree and MemAvailable: its
	// first 512 bytes hold them (the two are looked for in the whole
	// buffer all the same)
	return &sysinfoReader{loadavg: newProcFile("/proc/loadavg", 128), meminfo: newProcFile("/proc/meminfo", 512)}
}

// load15 is the 15-minute load average (0 when unknown).
func (r *sysinfoReader) load15() float64 { return parseLoad15(r.loadavg.read()) }

// memAvailPct is MemAvailable/MemTotal in percent, to a tenth (0 when
// unknown).
func (r *sysinfoReader) memAvailPct() float64 { return parseMemAvailPct(r.meminfo.read()) }

func (r *sysinfoReader) close() {
	r.loadavg.close()
	r.meminfo.close()
}

// parseLoad15 reads the third field of /proc/loadavg.
func parseLoad15(b []byte) float64 {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0
	}
	v, _ := strconv.ParseFloat(string(f[2]), 64)
	return v
}

// parseMemAvailPct reads MemTotal and MemAvailable from /proc/meminfo.
func parseMemAvailPct(b []byte) float64 {
	total, avail := meminfoKB(b, "MemTotal:"), meminfoKB(b, "MemAvailable:")
	if total == 0 {
		return 0
	}
	return float64(int(avail/total*1000)) / 10
}

// meminfoKB is the value of the line that starts with key (0 when none).
func meminfoKB(b []byte, key string) float64 {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			v, _ := strconv.ParseFloat(string(f[0]), 64)
			return v
		}
	}
	return 0
}

// capacity is the node's capacity for the services' requests: node.toml's
// capacity_cpu and capacity_mem, the host's where 0 (the CPUs this
// process may use, MemTotal).
func (r *sysinfoReader) capacity(nc *config.NodeConfig) dataset.Capacity {
	return hostCapacity(nc, runtime.NumCPU(), r.meminfo.read())
}

// hostCapacity is capacity with the host's CPU count and meminfo.
func hostCapacity(nc *config.NodeConfig, cpus int, meminfo []byte) dataset.Capacity {
	c := dataset.Capacity{CPUMilli: int64(nc.CapacityCPU), MemBytes: int64(nc.CapacityMem)}
	if c.CPUMilli == 0 {
		c.CPUMilli = int64(cpus) * 1000
	}
	if c.MemBytes == 0 {
		c.MemBytes = int64(meminfoKB(meminfo, "MemTotal:")) * 1024
	}
	return c
}
