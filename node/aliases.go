package node

import (
	"haven/dataset"
	"haven/node/instsm"
	"haven/node/vocab"
)

// The vocabulary of the core (package node/vocab), and what the driver
// says of an instance (node/instsm), under their names here: the driver
// and the parts of the core name the same types.
type (
	Level           = vocab.Level
	Event           = vocab.Event
	Ready           = vocab.Ready
	Ticket          = vocab.Ticket
	Answer          = vocab.Answer
	Action          = vocab.Action
	Check           = vocab.Check
	Probe           = vocab.Probe
	Fence           = vocab.Fence
	NodeAction      = vocab.NodeAction
	ConfigOp        = vocab.ConfigOp
	State           = vocab.State
	ServiceState    = vocab.ServiceState
	Serials         = vocab.Serials
	RolloutState    = vocab.RolloutState
	ClusterIdentity = vocab.ClusterIdentity
	RestartCount    = vocab.RestartCount

	Config       = vocab.Config
	Local        = vocab.Local
	ConfigCodec  = vocab.ConfigCodec
	QuorumConfig = vocab.QuorumConfig
	GuardConfig  = vocab.GuardConfig

	PeerKind  = vocab.PeerKind
	PeerEvent = vocab.PeerEvent

	InstanceSpec = instsm.Spec
	ResourceSpec = instsm.ResourceSpec
)

// The levels of an event, the kinds of a node action, the split actions,
// the kinds of the news of a peer.
const (
	Info  = vocab.Info
	Warn  = vocab.Warn
	Error = vocab.Error

	NodeCrash  = vocab.NodeCrash
	NodeReboot = vocab.NodeReboot

	SplitStop     = vocab.SplitStop
	SplitCrash    = vocab.SplitCrash
	SplitReboot   = vocab.SplitReboot
	SplitDisabled = vocab.SplitDisabled

	PeerUp            = vocab.PeerUp
	PeerDown          = vocab.PeerDown
	PeerData          = vocab.PeerData
	PeerUnseen        = vocab.PeerUnseen
	PeerStale         = vocab.PeerStale
	PeerFresh         = vocab.PeerFresh
	PeerDuplicate     = vocab.PeerDuplicate
	PeerDuplicateGone = vocab.PeerDuplicateGone
	PeerRunHeld       = vocab.PeerRunHeld
	PeerRunTrusted    = vocab.PeerRunTrusted
)

// failedf is an error of an answer (exit status 1).
func failedf(format string, a ...any) error { return vocab.Failedf(format, a...) }

// activeTarget reports whether t asks for something not yet reached.
func activeTarget(t dataset.Target) bool {
	return t.Active()
}
