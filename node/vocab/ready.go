package vocab

import (
	"fmt"
	"time"
)

// Ready is what the driver must carry out after an input, in this order:
// write Persist (before any answer is released: an answer is a promise
// that what it says is durable), publish when Publish is set, emit the
// Events, then release the Answers.
type Ready struct {
	// Persist is the durable state to write, nil when unchanged since the
	// last Ready. It is the core's own state: encode it before the next
	// input.
	Persist *State
	// Publish is set when the local dataset changed (the heartbeats send
	// a delta).
	Publish bool
	// Events are the typed events of the input, in order.
	Events []Event
	// Answers end admin requests and --wait callers, by ticket.
	Answers []Answer
	// Run are the actions to start, in order, once Persist is written
	// (an action never rests on a change that may be undone: when the
	// write fails, the driver reports actionAborted instead); Check the
	// status checks.
	Run   []Action
	Check []Check
	// Probes are the arbitrators to probe now; Fences the lost peers to
	// fence (node/quorum.go): run off the loop, reported with arbitratorResult
	// and fenceEnded.
	Probes []Probe
	Fences []Fence
	// NodeActions are the node actions to run (crash, reboot), once
	// Persist is written (node/nodeaction.go).
	NodeActions []NodeAction
	// WakeAt is the earliest time the driver must call Orchestrate again
	// (zero: no need before the next input).
	WakeAt time.Time
	// PersistSeq numbers Persist: the driver reports its write with
	// persistDone(PersistSeq, err). Answers and Run wait for it: those of
	// a Ready whose state is not on disk come in a later Ready. While a
	// write is in flight Persist is nil and PersistSeq numbers the state
	// that will hold this Ready's changes, handed out when that write
	// ends (group commit, node/persist.go).
	PersistSeq uint64
	// Configs are the config files to write or remove, in order, each
	// reported with configDone (node/configs.go). They do not wait for Persist:
	// the state records a config only once its file is written.
	Configs []ConfigOp
	// Announce are the services whose local instance must announce its
	// addresses again (resource.Set.Announce): the instance left alone
	// after running on several nodes (node/multiactive.go). They do not wait
	// for Persist: nothing durable rests on them.
	Announce []string
	// Ordered are the actions ordered by this Ready and held until its
	// state is on disk: they come in the Run of a later Ready (or are
	// aborted if the write fails). A driver that binds an action to what
	// it holds when the action is ordered (the daemon: the resource
	// drivers of the config of that time) does it here.
	Ordered []Action
}

// Empty reports whether r asks nothing of the driver.
func (r *Ready) Empty() bool {
	return r.Persist == nil && !r.Publish && len(r.Events) == 0 && len(r.Answers) == 0 && len(r.Run) == 0 && len(r.Check) == 0 && len(r.Probes) == 0 && len(r.NodeActions) == 0 && len(r.Fences) == 0 && r.WakeAt.IsZero() &&
		len(r.Configs) == 0 && len(r.Announce) == 0
}

// Append adds what o asks after what r asks, as one Ready: the newer
// state to write (o's Persist with its PersistSeq, when it has one), the
// lists in order, Publish when either sets it, the earlier wake-up.
func (r *Ready) Append(o Ready) {
	if o.Persist != nil {
		r.Persist, r.PersistSeq = o.Persist, o.PersistSeq
	} else if o.PersistSeq > r.PersistSeq {
		r.PersistSeq = o.PersistSeq
	}
	r.Publish = r.Publish || o.Publish
	r.Events = append(r.Events, o.Events...)
	r.Answers = append(r.Answers, o.Answers...)
	r.Run = append(r.Run, o.Run...)
	r.Check = append(r.Check, o.Check...)
	r.Probes = append(r.Probes, o.Probes...)
	r.Fences = append(r.Fences, o.Fences...)
	r.NodeActions = append(r.NodeActions, o.NodeActions...)
	r.Configs = append(r.Configs, o.Configs...)
	r.Ordered = append(r.Ordered, o.Ordered...)
	r.Announce = append(r.Announce, o.Announce...)
	if !o.WakeAt.IsZero() && (r.WakeAt.IsZero() || o.WakeAt.Before(r.WakeAt)) {
		r.WakeAt = o.WakeAt
	}
}

// Ticket identifies an admin request or a --wait caller until its answer.
type Ticket uint64

// Answer ends the request of Ticket: a result, or an error. Bad marks an
// error in the request itself (exit status 2), else an error is a failure
// (exit status 1).
type Answer struct {
	Ticket Ticket
	// ID is the target's id, when the request set or joined one.
	ID     string
	Result string
	Err    error
	Bad    bool
	// WasFrozen is the frozen state of the service before the admin
	// target action of the request (WasFrozen, WasMixed, WasThawed), ""
	// for the other requests.
	WasFrozen string
}

// Failedf is an error of an answer (exit status 1).
func Failedf(format string, a ...any) error { return fmt.Errorf(format, a...) }
