package vocab

import (
	"time"

	"haven/config"
	"haven/dataset"
	"haven/quorum"
)

// Config is what the core knows of its node: set once, by the driver.
type Config struct {
	// Name is this node's name (the origin of the versions it hands out).
	Name string
	// ClusterNodes are the cluster's members, this node included.
	ClusterNodes []string
	// Compat is the compat version this node announces.
	Compat int
	// Format is the newest format version this node reads (node/upgrade:
	// upgrade.Current, HAVEN_FORMAT to rehearse); 0 takes no part in the
	// cluster feature level (node/featurelevel.go).
	Format int
	// Release is the node's release, announced with its formats.
	Release string
	// MaintenanceGrace, RejoinGrace and ReadyPeriod are node.toml's
	// maintenance_grace_period, rejoin_grace_period and ready_period.
	MaintenanceGrace time.Duration
	RejoinGrace      time.Duration
	ReadyPeriod      time.Duration
	// ReadyFastAck is node.ready_fast_ack: ack the peers' claims, and start
	// a claim of this node's once every live node acked it (node/fastack.go).
	ReadyFastAck bool
	// CheckInterval and MonitorInterval are node.toml's check_interval
	// (a full check of every instance) and monitor_interval (its
	// monitored resources).
	CheckInterval   time.Duration
	MonitorInterval time.Duration
	// Quorum is cluster.quorum and what goes with it (node/quorum.go).
	Quorum QuorumConfig
	// ClusterConf is the digest of the configuration every member must
	// share, announced and compared with the members' (node/clusterconf.go);
	// nil: none (nothing compared). ClusterFile is cluster.toml's path,
	// for the messages.
	ClusterConf *dataset.ClusterConf
	ClusterFile string
	// SignedConfigs: cluster.toml lists admin keys, and the codec checks
	// the configs' signatures (node/configsigned.go). Without it the
	// serials of signed configs are forgotten at start.
	SignedConfigs bool
	// Admin is the cluster's name and [admin_keys]: with keys, a peer's
	// deletion and its targets that make the other nodes act need an
	// admin's signature, once the cluster feature level is 2
	// (node/configsigned.go).
	Admin config.SignatureCheck
	// Guard is node.guard and what goes with it (node/guard.go).
	Guard GuardConfig
	// Local gives what the driver owns of the node's view (nil: an empty
	// node, for tests of the durable state alone).
	Local Local
	// Configs parses and edits service configs for config distribution
	// (node/configs.go); nil: no config distribution (a peer's configs are not
	// installed). ConfirmTimeout bounds the wait for the peers' adoption
	// of an edit made here (default 10s).
	Configs        ConfigCodec
	ConfirmTimeout time.Duration
	// WriteThrough is a driver's promise that it writes Ready.Persist
	// before it takes anything else of the Ready, and never fails (unit
	// tests): the core then counts each state written as soon as it
	// hands it out, without persistDone.
	WriteThrough bool
}

// Local is what the driver still owns of the node's view: the part of its
// own dataset entry that the core does not keep (LocalInfo: name, load,
// memory, labels, the instances of configs that could not be read) and
// the configs of its services. The core reads it to build the decision
// core's snapshot, adding its own part (Dataset). Its methods must not
// call back into the core's inputs.
type Local interface {
	LocalInfo() dataset.Node
	LocalServices() map[string]*config.ServiceConfig
}

// ConfigCodec parses and edits the text of service configs for the core,
// which reaches no TOML parser (tomlfile.ServiceCodec is the drivers').
type ConfigCodec interface {
	// ParseService parses and validates the config of service name.
	ParseService(name string, raw []byte) (*config.ServiceConfig, error)
	// EditService applies the keyword edits kws of op ("set", "add": a set
	// that may add a resource, "unset").
	EditService(name string, raw []byte, op string, kws []string) ([]byte, error)
}

// QuorumConfig is cluster.quorum and what goes with it (docs/behaviour.md 3).
type QuorumConfig struct {
	// Enabled is cluster.quorum: without it, a split is ignored.
	Enabled bool
	// SplitAction is node.split_action.
	SplitAction string
	// Arbitrators are the [arbitrator.NAME] sections (Answered unused).
	Arbitrators []quorum.Arbitrator
	// Timing makes the self-stop deadline (quorum.Timing); its StopBudget
	// is a floor, raised to the longest stop of a known service.
	Timing quorum.Timing
	// HBTimeout is hb.timeout: a gap longer than this between two ticks
	// means this daemon was paused (SIGSTOP, a VM frozen): its peers may
	// have declared it down and taken its services over.
	HBTimeout time.Duration
	// DiskFence is [hb.disk] fence: a node that loses the disk and the
	// majority of the members applies its split_action (node/disksplit.go).
	DiskFence bool
	// Stonith are the members that have a [stonith.NODE] fence command:
	// a survivor fences them before a takeover, and only a fence clears it.
	Stonith []string
}

// Split actions (node.split_action).
const (
	SplitStop     = "stop"
	SplitCrash    = "crash"
	SplitReboot   = "reboot"
	SplitDisabled = "disabled"
)

// GuardConfig is node.guard and what goes with it.
type GuardConfig struct {
	// Enabled is node.guard.
	Enabled bool
	// Lease is node.guard_lease: the guard acts when the lease was not
	// renewed for this long.
	Lease time.Duration
	// Act bounds the guard's action after the lease ran out
	// (config.GuardAct).
	Act time.Duration
}
