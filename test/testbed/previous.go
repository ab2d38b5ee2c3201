package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The previous release (docs/operations.md, "Upgrading"): the commit
// pinned in packaging/previous-release, built from the repository's own
// history with `git worktree`, so that the upgrade tests run the real
// binaries a cluster is upgraded from.

// PreviousReleaseFile is the file that pins the previous release's commit,
// relative to the repository's top.
const PreviousReleaseFile = "packaging/previous-release"

// ErrNoHistory: the repository's history does not hold the pinned commit
// (a shallow clone, a source tarball): the caller skips, saying so.
var ErrNoHistory = errors.New("the previous release's commit is not in this repository's history")

var previous struct {
	once sync.Once
	dir  string
	err  error
}

// PreviousRelease builds the previous release's programs (BuildNode)
// once per process (and once per commit on the machine: they are kept in
// the temporary directory) and returns the directory that holds them. It
// returns an error wrapping ErrNoHistory when the commit is not in the
// history.
func PreviousRelease() (string, error) {
	previous.once.Do(func() { previous.dir, previous.err = buildPrevious() })
	return previous.dir, previous.err
}

func buildPrevious() (string, error) {
	top, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%w: not in a git repository: %v", ErrNoHistory, err)
	}
	b, err := os.ReadFile(filepath.Join(top, PreviousReleaseFile))
	if err != nil {
		return "", err
	}
	commit := ""
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			commit = l
			break
		}
	}
	if commit == "" {
		return "", fmt.Errorf("%s names no commit", PreviousReleaseFile)
	}
	if _, err := gitOut(top, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return "", fmt.Errorf("%w: %s (%s; clone the whole history)", ErrNoHistory, commit, PreviousReleaseFile)
	}
	dir := filepath.Join(os.TempDir(), "haven-previous-"+commit)
	if _, err := os.Stat(filepath.Join(dir, "svcmon")); err == nil {
		return dir, nil
	}
	src, err := os.MkdirTemp("", "haven-previous-src")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	tree := filepath.Join(src, "tree")
	gitOut(top, "worktree", "prune") // what a killed run left
	if _, err := gitOut(top, "worktree", "add", "--detach", tree, commit); err != nil {
		return "", fmt.Errorf("git worktree add %s: %w", commit, err)
	}
	defer gitOut(top, "worktree", "remove", "--force", tree)
	tmp, err := os.MkdirTemp(os.TempDir(), "haven-previous-build")
	if err != nil {
		return "", err
	}
	if err := BuildNode(tmp, tree); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(dir, "svcmon")); serr == nil {
			return dir, nil // built by another process meanwhile
		}
		return "", err
	}
	return dir, nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
