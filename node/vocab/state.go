package vocab

import (
	"time"

	"haven/dataset"
)

// State is what survives a daemon restart: the driver writes it (the
// daemon to R/var/state.json, atomically, in a checksummed envelope; the
// simulation to the simulated machine) whenever Ready.Persist says so.
//
// The daemon decodes the file strictly: a field tagged without omitempty
// is required, an unknown key or a null is refused. A new field that
// files written before it lack must be tagged omitempty.
type State struct {
	// Lamport is the node's logical clock for targets and config versions.
	Lamport    uint64                  `json:"lamport"`
	NodeFrozen bool                    `json:"node_frozen"`
	Services   map[string]ServiceState `json:"services"`

	// NodeFrozenReason says why the node is frozen (dataset.Node.FrozenReason).
	NodeFrozenReason string `json:"node_frozen_reason,omitempty"`
	// SplitFrozen is set while the node is frozen by its split_action
	// stop (dataset.Node.SplitFrozen), SplitFrozenReason the vote that
	// lost: kept apart from NodeFrozen, which the quorum rule never ends.
	SplitFrozen       bool   `json:"split_frozen,omitempty"`
	SplitFrozenReason string `json:"split_frozen_reason,omitempty"`
	// Tombstones remember deleted services so that older copies of their
	// config still travelling between nodes never resurrect them.
	Tombstones map[string]dataset.Version `json:"tombstones,omitempty"`
	// TombstoneSigs are the admin signatures of the tombstones that have
	// one (dataset.ConfigEntry.Sig): relayed with them, and their serial
	// is the floor of a config that brings the service back.
	TombstoneSigs map[string]string `json:"tombstone_sigs,omitempty"`
	// Cluster is the multi-node cluster this node was a member of.
	Cluster *ClusterIdentity `json:"cluster,omitempty"`
	// Incarnation numbers this node's last run in the heartbeat envelope:
	// peers drop frames of earlier runs, so it must never go backwards.
	Incarnation uint64 `json:"incarnation,omitempty"`

	// FeatureLevel is the cluster feature level this node runs at
	// (node/featurelevel.go); 0 is 1. Not in the state object: the daemon
	// writes it in the file's envelope (from version 2), so that a
	// release that cannot read that level's formats refuses the file.
	FeatureLevel int `json:"-"`
}

// ServiceState is the durable state of one service known to this node (its
// config is installed here, or kept as invalid). A service without an
// entry is unknown: targets and clears heard for it are not adopted.
type ServiceState struct {
	Frozen bool `json:"frozen"`
	// LocalExpect is "started" when the daemon (or an admin) started the
	// instance, so that a restarted daemon knows what it was running.
	LocalExpect string         `json:"local_expect,omitempty"`
	Target      dataset.Target `json:"target,omitempty"`
	// ConfigVersion orders config edits across the cluster.
	ConfigVersion dataset.Version `json:"config_version"`
	// ConfigDigest is dataset.ConfigDigest of the file installed at
	// ConfigVersion: a file that no longer matches it was changed outside
	// Haven. ConfigIncludes is the entry's dataset.ConfigEntry.Includes.
	ConfigDigest   string            `json:"config_digest,omitempty"`
	ConfigIncludes map[string]uint64 `json:"config_includes,omitempty"`
	// Serials: the admin-signed configs' replay floor.
	Serials
	// StartFailed survives a restart so a failed node does not retry blindly.
	StartFailed bool `json:"start_failed,omitempty"`
	// Clear is the newest clear request known (applied once, relayed).
	Clear dataset.ClearRequest `json:"clear,omitempty"`
	// FencingToken is the fencing token of the last start of the service
	// on this node (its running instance's); FencingSeen the highest token
	// known for the service anywhere (node/fencing.go). Written before the start
	// runs.
	FencingToken uint64 `json:"fencing_token,omitempty"`
	FencingSeen  uint64 `json:"fencing_seen,omitempty"`
	// Restarts are the restart ladder's counters, by rid (node/ladder.go): a
	// daemon restart does not give restarts back.
	Restarts map[string]RestartCount `json:"restarts,omitempty"`
	// GaveUp says why the ladder stopped restarting (dataset.Instance.GaveUp);
	// Excluded why this node is out of the candidates after a
	// monitor_action switch (dataset.Instance.Excluded).
	GaveUp   string `json:"gave_up,omitempty"`
	Excluded string `json:"excluded,omitempty"`
	// ActionHeld is the monitor_action (switch or freezestop) the ladder
	// could not run when it gave up, for want of another candidate node:
	// it runs once one appears (a peer's split freeze ended, a node came
	// back), unless the ladder was reset meanwhile.
	ActionHeld string `json:"action_held,omitempty"`
	// RolloutState: the config the instance runs and the rollout's turn.
	RolloutState
}

// Serials are the serials of the admin-signed configs of a service seen
// here (a sub-machine of ServiceState, its fields at the service's level
// in the state file). ConfigSerial is the highest serial of an
// admin-signed config installed here, ConfigSerialFloor the serial of the
// config it replaced: a signed config below the floor is an older one
// sent again and refused (node/configsigned.go). 0 while configs are not
// signed.
type Serials struct {
	ConfigSerial      uint64 `json:"config_serial,omitempty"`
	ConfigSerialFloor uint64 `json:"config_serial_floor,omitempty"`
	// TargetSerial is the highest serial of an admin-signed target taken
	// here: a peer's signed target must be above it (a replay is not).
	TargetSerial uint64 `json:"target_serial,omitempty"`
}

// RolloutState is a service's share of the rollouts (node/rollout.go; a
// sub-machine of ServiceState, its fields at the service's level in the
// state file).
type RolloutState struct {
	// RunDigest is the config digest installed when the daemon last
	// ordered a whole start or restart of the instance: the config it runs
	// (dataset.Instance.RunDigest).
	RunDigest string `json:"run_digest,omitempty"`
	// Rollout is the newest rollout of the service known here, and
	// RolloutMark this node's turn in it: both replaced whole, never
	// changed in place.
	Rollout     *dataset.Rollout     `json:"rollout,omitempty"`
	RolloutMark *dataset.RolloutMark `json:"rollout_mark,omitempty"`
	// Previous is the config installed before the current one (its text,
	// signature included, and digest): what a rollback installs again.
	// Written with the version that replaced it.
	Previous *dataset.PrevConfig `json:"previous,omitempty"`
}

// ClusterIdentity is what a node remembers of the multi-node cluster it
// was a member of, so that a start with a missing or another cluster.toml
// is refused instead of making a second cluster.
type ClusterIdentity struct {
	Name string `json:"name"`
	// SecretFingerprint identifies the secret without revealing it: the
	// first 16 bytes of HMAC-SHA256(secret, "haven cluster identity"), in
	// hex; "" for a cluster without a secret (insecure_no_secret).
	SecretFingerprint string `json:"secret_fingerprint"`
}

// Clone returns a copy that shares nothing mutable with s at the top two
// levels (the maps of services and tombstones).
func (s State) Clone() State {
	out := s
	out.Services = make(map[string]ServiceState, len(s.Services))
	for k, v := range s.Services {
		out.Services[k] = v
	}
	if s.Tombstones != nil {
		out.Tombstones = make(map[string]dataset.Version, len(s.Tombstones))
		for k, v := range s.Tombstones {
			out.Tombstones[k] = v
		}
	}
	if s.TombstoneSigs != nil {
		out.TombstoneSigs = make(map[string]string, len(s.TombstoneSigs))
		for k, v := range s.TombstoneSigs {
			out.TombstoneSigs[k] = v
		}
	}
	if s.Cluster != nil {
		c := *s.Cluster
		out.Cluster = &c
	}
	return out
}

// RestartCount is the durable state of the restart ladder of one resource.
type RestartCount struct {
	// Spent is the number of restarts ordered since the counter was last
	// reset.
	Spent int `json:"spent"`
	// At are when the restarts still counted were ordered, oldest first,
	// kept only for a resource with a restart_window: Spent is then
	// len(At), and a restart older than the window leaves it.
	At []time.Time `json:"at,omitempty"`
	// LastFailure is what the check said when the resource was last found
	// down, FailedAt when.
	LastFailure string    `json:"last_failure,omitempty"`
	FailedAt    time.Time `json:"failed_at,omitzero"`
}
