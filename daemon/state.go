package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"haven/dataset"
	"haven/fsutil"
)

// durable is what survives a daemon restart, written atomically to
// R/var/state.json on every change of any of its fields.
type durable struct {
	// Lamport is the node's logical clock for targets and config versions.
	Lamport    uint64                    `json:"lamport"`
	NodeFrozen bool                      `json:"node_frozen"`
	Services   map[string]durableService `json:"services"`
	// Tombstones remember deleted services so that older copies of their
	// config still travelling between nodes never resurrect them.
	Tombstones map[string]dataset.Version `json:"tombstones,omitempty"`
}

type durableService struct {
	Frozen bool `json:"frozen"`
	// LocalExpect is "started" when the daemon (or an admin) started the
	// instance, so that a restarted daemon knows what it was running.
	LocalExpect string         `json:"local_expect,omitempty"`
	Target      dataset.Target `json:"target,omitempty"`
	// ConfigVersion orders config edits across the cluster.
	ConfigVersion dataset.Version `json:"config_version"`
	// StartFailed survives a restart so a failed node does not retry blindly.
	StartFailed bool `json:"start_failed,omitempty"`
	// Clear is the newest clear request known (applied once, relayed).
	Clear dataset.ClearRequest `json:"clear,omitempty"`
}

func loadDurable(path string) (durable, error) {
	d := durable{Services: map[string]durableService{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: corrupt state file: %w", path, err)
	}
	if d.Services == nil {
		d.Services = map[string]durableService{}
	}
	return d, nil
}

func saveDurable(path string, d durable) error {
	return fsutil.WriteJSON(path, d, 0o600)
}
