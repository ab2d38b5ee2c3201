package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"haven/config"
)

// A state file that is not there is not a fresh start by itself: the node
// may have run before (var/ on a disk not mounted, the file removed), and
// an empty state would forget its frozen flags, targets, config versions
// and cluster identity. openState refuses, unless the sysadmin says so
// (Options.NewState: nodemgr daemon run/start --new-state):
//
//   - no state file while service configs exist in etc/services;
//   - a state file that is a symbolic link to nothing (an unmounted disk);
//   - a state file of the format before the envelope (no checksum: it
//     cannot be told from a file damaged or edited by hand).
//
// A brand-new node (no state file, no service config) starts afresh.

// newStateFlag is how the sysadmin accepts a fresh or legacy state.
const newStateFlag = "--new-state (nodemgr daemon run or start)"

// openState reads the state file at path. accepted says why a state that
// needed --new-state was taken, or is brandNew ("" when neither).
func openState(path, serviceDir string, newState bool) (st durable, accepted string, err error) {
	fi, lerr := os.Lstat(path)
	switch {
	case lerr == nil && fi.Mode()&fs.ModeSymlink != 0:
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			target, _ := os.Readlink(path)
			if !newState {
				return st, "", &config.Error{File: path, Msg: fmt.Sprintf("a symbolic link to %s, which does not exist (is the disk of the state mounted?): "+
					"the daemon does not start without the state of this node (its frozen flags, targets, config versions and cluster identity); "+
					"mount the disk, or start once with %s to replace the link with a new, empty state", target, newStateFlag)}
			}
			return empty(), fmt.Sprintf("the state file was a symbolic link to %s, which does not exist: replaced with a new, empty state", target), nil
		}
	case errors.Is(lerr, fs.ErrNotExist):
		n := serviceConfigs(serviceDir)
		if n == 0 {
			return empty(), brandNew, nil
		}
		if !newState {
			return st, "", &config.Error{File: path, Msg: fmt.Sprintf("missing, but %d service config(s) exist in %s: this node has run before, and an empty state would forget its frozen flags, targets, config versions and cluster identity; "+
				"restore the file (or mount the disk it is on), or start once with %s to begin with a new, empty state", n, serviceDir, newStateFlag)}
		}
		return empty(), fmt.Sprintf("no state file while %d service config(s) exist: started with a new, empty state", n), nil
	}
	st, err = loadDurable(path)
	if err != nil {
		return st, "", err
	}
	if b, rerr := os.ReadFile(path); rerr == nil && bareState(b) {
		if !newState {
			return st, "", &config.Error{File: path, Msg: "a state file without envelope and checksum (the format of an older Haven, or a file written by hand): " +
				"it cannot be told from a damaged one; check it, then start once with " + newStateFlag + " to accept it (it is then written again with its checksum)"}
		}
		return st, "the state file without envelope and checksum was accepted: written again with its checksum", nil
	}
	return st, "", nil
}

// brandNew is what openState says of a brand-new node (no state file, no
// service config): its empty state is written at once, not logged, so
// that a config written later never lies on disk without a state file (a
// crash between the two would otherwise need --new-state).
const brandNew = "brand-new node"

func empty() durable { return durable{Services: map[string]durableService{}} }

// bareState reports whether b, a state file that decodes, is of the
// format before the envelope.
func bareState(b []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	return !hasEnvelope(top)
}

// serviceConfigs counts the service config files in dir.
func serviceConfigs(dir string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".toml") && config.ValidServiceName(config.ServiceNameFromFile(filepath.Join(dir, e.Name()))) == nil {
			n++
		}
	}
	return n
}
