package node

import "haven/dataset"

// The typed events of config distribution (configs.go). Their texts are
// those of the daemon's log before the core decided it.

// ConfigChangedOutside: a config file read at start-up is not the content
// recorded for its version: the file wins as a new version.
type ConfigChangedOutside struct {
	Svc     string          `json:"svc"`
	Old     dataset.Version `json:"old_version"`
	Version uint64          `json:"version"`
}

func (ConfigChangedOutside) Kind() string      { return "config_outside" }
func (e ConfigChangedOutside) Service() string { return e.Svc }
func (ConfigChangedOutside) Level() Level      { return Warn }
func (ConfigChangedOutside) String() string {
	return "service config changed outside Haven (its content is not the one recorded for its version): the file on disk wins as a new version"
}

// ConfigDeletedByPeer: a peer's tombstone wins: the service is deleted
// here (its instance stopped first if it runs).
type ConfigDeletedByPeer struct {
	Svc  string `json:"svc"`
	From string `json:"from"`
}

func (ConfigDeletedByPeer) Kind() string      { return "config_deleted_by_peer" }
func (e ConfigDeletedByPeer) Service() string { return e.Svc }
func (ConfigDeletedByPeer) Level() Level      { return Info }
func (ConfigDeletedByPeer) String() string    { return "service deleted by a peer" }

// ConfigRefused: a peer's config that wins over ours is not installed: an
// invalid name, a digest that does not match its content, or a config
// that does not parse here (Kept: the last good config stays). Said once
// per version.
type ConfigRefused struct {
	Svc    string `json:"svc"`
	From   string `json:"from"`
	Err    string `json:"error,omitempty"`
	Digest bool   `json:"digest,omitempty"`
	Kept   bool   `json:"kept,omitempty"`
	// Deletion: what is refused is the peer's deletion of the service
	// (its admin signature: node/configsigned.go); the config is kept.
	Deletion bool `json:"deletion,omitempty"`
}

func (ConfigRefused) Kind() string      { return "config_refused" }
func (e ConfigRefused) Service() string { return e.Svc }
func (ConfigRefused) Level() Level      { return Error }
func (e ConfigRefused) String() string {
	switch {
	case e.Deletion:
		return "deletion from peer refused, the config is kept"
	case e.Digest:
		return "config from peer refused: its digest does not match its content"
	case e.Kept:
		return "config from peer refused, last good config kept"
	}
	return "config from peer refused"
}

// ConfigConflict: a peer holds another content under the version we hold.
type ConfigConflict struct {
	Svc     string `json:"svc"`
	From    string `json:"from"`
	Version uint64 `json:"version"`
	Origin  string `json:"origin"`
	Digest  string `json:"digest"`
	Ours    string `json:"ours"`
}

func (ConfigConflict) Kind() string      { return "config_conflict" }
func (e ConfigConflict) Service() string { return e.Svc }
func (ConfigConflict) Level() Level      { return Warn }
func (ConfigConflict) String() string {
	return "config conflict: a peer holds another content under the same version: the higher digest wins on every node"
}

// ConfigInstallFailed: a peer's config could not be written here (tried
// again with its next heartbeat).
type ConfigInstallFailed struct {
	Svc  string `json:"svc"`
	From string `json:"from"`
	Err  string `json:"error"`
}

func (ConfigInstallFailed) Kind() string      { return "config_install_failed" }
func (e ConfigInstallFailed) Service() string { return e.Svc }
func (ConfigInstallFailed) Level() Level      { return Error }
func (ConfigInstallFailed) String() string    { return "install config from peer" }

// ConfigRebased: edits made here, pending, applied again on top of a
// concurrent version that won, as a new version.
type ConfigRebased struct {
	Svc     string `json:"svc"`
	From    string `json:"from"`
	Edits   int    `json:"edits"`
	Version uint64 `json:"version"`
}

func (ConfigRebased) Kind() string      { return "config_rebased" }
func (e ConfigRebased) Service() string { return e.Svc }
func (ConfigRebased) Level() Level      { return Info }
func (e ConfigRebased) String() string {
	return "config edits applied again on top of a concurrent version"
}

// ConfigUnconfirmed: live peers did not announce an edit made here within
// the confirmation timeout (the edit fails, installed here).
type ConfigUnconfirmed struct {
	Svc   string   `json:"svc"`
	Nodes []string `json:"nodes"`
}

func (ConfigUnconfirmed) Kind() string      { return "config_unconfirmed" }
func (e ConfigUnconfirmed) Service() string { return e.Svc }
func (ConfigUnconfirmed) Level() Level      { return Warn }
func (e ConfigUnconfirmed) String() string {
	return "config edit not confirmed by every live peer"
}
