package fsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrSymlink is in the error of a path under Haven's root that is, or goes
// through, a symbolic link: Haven never writes through one (a link
// planted in R/log or R/var would make the root-run daemon append to, or
// run commands in, whatever it points to).
var ErrSymlink = errors.New("is or goes through a symbolic link: refused (Haven never follows links it did not make under its root)")

// OpenAppendBeneath opens base/rel for appending, creating it 0600. No
// component of rel may be a symbolic link (base itself may: it is the
// admin's --root layout); the error then says so (ErrSymlink).
func OpenAppendBeneath(base, rel string) (*os.File, error) {
	path := filepath.Join(base, rel)
	dir, err := os.Open(base)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	how := unix.OpenHow{
		Flags:   unix.O_APPEND | unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Mode:    0o600,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	}
	fd, err := unix.Openat2(int(dir.Fd()), rel, &how)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		// a kernel before 5.6, or a seccomp filter that refuses openat2
		// (old container runtimes): the file itself is still never
		// followed, and a real permission error shows again below
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, linkErr(path, err)
		}
		return f, nil
	}
	if err != nil {
		return nil, linkErr(path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	return os.NewFile(uintptr(fd), path), nil
}

// MkdirBeneath creates base/rel and its missing parents below base, mode
// 0700 (private: the daemon's files and the services' {var}), and checks
// that none of them is a symbolic link (ErrSymlink). Directories that
// exist keep their mode.
func MkdirBeneath(base, rel string) error {
	path := base
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		if part == "" || part == "." {
			continue
		}
		path = filepath.Join(path, part)
		// one lstat for a directory already there, the usual case (every
		// check of an app resource comes here for its {var})
		st, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			if err = os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			st, err = os.Lstat(path)
		}
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s %w", path, ErrSymlink)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", path)
		}
	}
	return nil
}

// linkErr says plainly that path is a link when the open failed on one
// (ELOOP: the file is a link under O_NOFOLLOW, or a component is one
// under RESOLVE_NO_SYMLINKS; EXDEV: a link leads out of base).
func linkErr(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("%s %w", path, ErrSymlink)
	}
	return err
}

// OpenNoFollow opens path for reading, refusing a path that is itself a
// symbolic link (ErrSymlink).
func OpenNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, linkErr(path, err)
	}
	return f, nil
}
