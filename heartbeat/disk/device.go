package disk

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Device is the shared disk: a block device or a file on shared storage.
// Its calls may block (a dead path, a hung NFS server): the servant runs
// them in a goroutine of their own and gives up on them after
// Config.Timeout, never the caller.
type Device interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
}

// Opener opens the device at path (OpenFile; tests inject others).
type Opener func(path string) (Device, error)

// OpenFile opens path for the disk heartbeat: read-write, created when
// missing (a file on shared storage; a block device exists), every write
// durable before it returns (O_DSYNC), and with O_DIRECT when the file
// system takes it, so that the reads see what the other hosts wrote and
// not this host's page cache. A file system that refuses O_DIRECT (tmpfs)
// is used without it: fine for a file shared by the processes of one host
// (tests), not for storage shared by several hosts.
func OpenFile(path string) (Device, error) {
	flags := os.O_RDWR | os.O_CREATE | syscall.O_DSYNC | syscall.O_CLOEXEC
	f, err := os.OpenFile(path, flags|syscall.O_DIRECT, 0o600)
	if err == nil {
		return &file{f: f, direct: true}, nil
	}
	if !errors.Is(err, syscall.EINVAL) {
		return nil, err
	}
	f, err = os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	return &file{f: f}, nil
}

// Direct reports whether a device opened by OpenFile bypasses the page
// cache.
func Direct(d Device) bool {
	f, ok := d.(*file)
	return ok && f.direct
}

type file struct {
	f      *os.File
	direct bool
}

// aligned returns a buffer of n bytes aligned on BlockSize (O_DIRECT).
func aligned(n int) []byte {
	b := make([]byte, n+BlockSize)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (BlockSize - 1))
	if off != 0 {
		off = BlockSize - off
	}
	return b[off : off+n]
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if !f.direct {
		return f.f.ReadAt(p, off)
	}
	buf := aligned(len(p))
	n, err := f.f.ReadAt(buf, off)
	copy(p, buf[:n])
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if !f.direct {
		return f.f.WriteAt(p, off)
	}
	buf := aligned(len(p))
	copy(buf, p)
	return f.f.WriteAt(buf, off)
}

func (f *file) Close() error { return f.f.Close() }
