// Package fsutil holds the small file helpers the shell shares: atomic
// writes (temp file, fsync, rename, fsync of the directory).
package fsutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteAtomic writes data to path so that a crash leaves either the old or
// the new content, never a mix. Its error says "write PATH: cause" once,
// whichever step failed (see writeErr).
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, os.Rename)
}

// WriteNew is WriteAtomic of a file that must not exist yet: an existing
// path is never replaced (the error wraps fs.ErrExist), even one created
// meanwhile (the temporary file is linked, not renamed, to path).
func WriteNew(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, func(tmp, path string) error {
		if err := os.Link(tmp, path); err != nil {
			return err
		}
		return os.Remove(tmp)
	})
}

func writeAtomic(path string, data []byte, perm os.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return writeErr(path, "", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return writeErr(path, "", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return writeErr(path, tmp, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return writeErr(path, tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return writeErr(path, tmp, err)
	}
	if err := f.Close(); err != nil {
		return writeErr(path, tmp, err)
	}
	if err := place(tmp, path); err != nil {
		return writeErr(path, tmp, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeErr names path once: the errors of the steps name the temporary
// file (removed by then) or, for a rename, both files; only their cause
// is kept. An error about another path (the directory) keeps it. The
// cause stays reachable with errors.Is (syscall.ENOSPC...).
func writeErr(path, tmp string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe) && (pe.Path == tmp || pe.Path == path):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("write %s: %w", path, err)
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteAtomic(path, append(b, '\n'), perm)
}
