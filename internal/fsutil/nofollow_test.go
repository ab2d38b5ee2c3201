package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// No write through a link below the base, whether the
// file or a directory on the way is the link; created directories are 0700.
func TestNoFollowBeneath(t *testing.T) {
	base, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "target")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirBeneath(base, "services"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(base, "services")); st.Mode().Perm() != 0o700 {
		t.Fatalf("services: mode %v, want 0700", st.Mode().Perm())
	}
	f, err := OpenAppendBeneath(base, "services/web.log")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(filepath.Join(base, "services", "web.log")); st.Mode().Perm() != 0o600 {
		t.Fatalf("web.log: mode %v, want 0600", st.Mode().Perm())
	}
	os.Symlink(target, filepath.Join(base, "services", "db.log"))
	os.Symlink(outside, filepath.Join(base, "linked"))
	for _, rel := range []string{"services/db.log", "linked/target", "linked/new.log"} {
		if f, err := OpenAppendBeneath(base, rel); !errors.Is(err, ErrSymlink) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenAppendBeneath %s: %v, want ErrSymlink", rel, err)
		}
	}
	if _, err := OpenNoFollow(filepath.Join(base, "services", "db.log")); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenNoFollow of a link: %v, want ErrSymlink", err)
	}
	for _, rel := range []string{"linked", "linked/web"} {
		if err := MkdirBeneath(base, rel); !errors.Is(err, ErrSymlink) {
			t.Errorf("MkdirBeneath %s: %v, want ErrSymlink", rel, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("something was made through a link: %v", ents)
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Fatalf("written through a link: %q", b)
	}
}
