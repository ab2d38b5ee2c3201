package dataset

import "slices"

// Rollout is a rolling restart of a service's running instances on a new
// config (docs/behaviour.md 11): made once, on the node that took the
// request, then relayed unchanged in every node's instance entry of the
// service; the newest Version wins, as for a target. It carries the
// policy and the node list fixed at creation, so that every node decides
// its own turn with the same numbers and the same batches.
type Rollout struct {
	ID      string  `json:"id"`
	Version Version `json:"version"`
	// Digest is the config digest the instances are restarted on.
	Digest string `json:"digest"`
	// Nodes are the nodes whose instance is restarted, in placement
	// order: batch k is Nodes[k*Parallelism : (k+1)*Parallelism].
	Nodes       []string `json:"nodes"`
	Parallelism int      `json:"parallelism"`
	// DelayMs is the wait after a batch ended before the next one starts,
	// MonitorMs how long a restarted instance must stay up to count as a
	// success, in milliseconds.
	DelayMs   int64 `json:"delay_ms,omitempty"`
	MonitorMs int64 `json:"monitor_ms,omitempty"`
	// MaxFailureRatio: more failed turns than this share of Nodes takes
	// FailureAction ("rollback", "pause" or "continue").
	MaxFailureRatio float64 `json:"max_failure_ratio,omitempty"`
	FailureAction   string  `json:"failure_action"`
	// Order is update_order: "" (stop-first: each node restarts its
	// instance in place) or OrderStartFirst (each node's old instance
	// leaves its slot to a replacement started elsewhere, and stops once
	// the replacement is up).
	Order string `json:"order,omitempty"`
	// DownNodes is update_down_nodes: "skip" lets the next batches go
	// past a node down when its turn comes (it takes its turn when it
	// returns); "" (wait) holds them until it is back.
	DownNodes string `json:"down_nodes,omitempty"`
	// Undoes is set on a rollback (update_failure_action rollback, or
	// svcmgr rollback): the ID of the rollout it undoes ("" when there was
	// none), and Cause why ("n2: restart failed: ...", "by hand"). Its
	// Digest is the previous config, installed as a new version.
	Rollback bool   `json:"rollback,omitempty"`
	Undoes   string `json:"undoes,omitempty"`
	Cause    string `json:"cause,omitempty"`
	// Stopped, when set, pauses the rollout whatever its turns: the
	// config it rolls out was superseded by a newer edit (its nodes would
	// wait for it for ever), said by the node that speaks for it.
	Stopped string `json:"stopped,omitempty"`
}

// PrevConfig is the config a service held before its current one (kept
// by every node when it installs a new version; node/rollback.go): what a
// rollback installs again, signature included.
type PrevConfig struct {
	Digest string `json:"digest"`
	Raw    string `json:"raw"`
}

// Equal reports whether two rollouts are the same (nil is none).
func (r *Rollout) Equal(o *Rollout) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.ID == o.ID && r.Version == o.Version && r.Digest == o.Digest && slices.Equal(r.Nodes, o.Nodes) &&
		r.Parallelism == o.Parallelism && r.DelayMs == o.DelayMs && r.MonitorMs == o.MonitorMs &&
		r.MaxFailureRatio == o.MaxFailureRatio && r.FailureAction == o.FailureAction && r.DownNodes == o.DownNodes &&
		r.Rollback == o.Rollback && r.Undoes == o.Undoes && r.Cause == o.Cause && r.Stopped == o.Stopped && r.Order == o.Order
}

// OrderStartFirst is Rollout.Order for update_order = "start-first".
const OrderStartFirst = "start-first"

// The states of a node's turn in a rollout (RolloutMark.State).
const (
	// TurnDelay: the batch before ended; the node waits the rollout's
	// DelayMs from SinceMs before its restart.
	TurnDelay = "delay"
	// TurnRestarting: the restart is ordered or running.
	TurnRestarting = "restarting"
	// TurnReplacing (start-first): the instance runs on but leaves its
	// slot to a replacement, which placement starts on a spare candidate;
	// it stops once the replacement is up (then TurnOK), or restarts in
	// place when no spare candidate is left (then TurnRestarting).
	TurnReplacing = "replacing"
	// TurnMonitoring: restarted, watched for the rollout's MonitorMs.
	TurnMonitoring = "monitoring"
	// TurnOK: stayed up for MonitorMs on the new config.
	TurnOK = "ok"
	// TurnFailed: the restart failed, or the instance went down within
	// MonitorMs; Cause says which.
	TurnFailed = "failed"
	// TurnSkipped: the node is down and the rollout's DownNodes is skip;
	// never announced (the nodes that see it down count it so), its
	// turn is taken when it returns.
	TurnSkipped = "skipped"
)

// RolloutMark is how a node's own turn in the rollout ID went, announced
// in its instance entry.
type RolloutMark struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Cause string `json:"cause,omitempty"`
	// SinceMs is when the state began on the announcing node's clock
	// (Unix milliseconds); only that node reads it.
	SinceMs int64 `json:"since_ms,omitempty"`
}

// Leaving reports whether inst, as announced, runs an instance that left
// its slot to a replacement (its node's turn of a start-first rollout is
// under way, TurnReplacing): the flex placement counts it against
// flex_max but not flex_target, and the instances beyond flex_target do
// not stop it (it stops by itself once replaced).
func (i Instance) Leaving() bool {
	m := i.RolloutMark
	return m != nil && m.State == TurnReplacing && i.Rollout != nil && m.ID == i.Rollout.ID
}

// Final reports whether the turn ended (ok or failed).
func (m *RolloutMark) Final() bool {
	return m != nil && (m.State == TurnOK || m.State == TurnFailed)
}

// ShortDigest is the first 12 characters of a config digest, as printed.
func ShortDigest(d string) string { return d[:min(12, len(d))] }
