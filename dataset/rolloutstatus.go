package dataset

// The states of a rollout as a whole (RolloutStatus.State): in progress,
// paused (more failed turns than update_max_failure_ratio under pause),
// done (every turn ok) or done with failures (every turn ended, some
// failed, under continue). Every state but in progress is an end: no
// node takes a turn in it any more until a newer rollout replaces it.
const (
	RolloutInProgress       = "in_progress"
	RolloutPaused           = "paused"
	RolloutDone             = "done"
	RolloutDoneWithFailures = "done_with_failures"
)

// RolloutStatus is where the newest rollout of a service stands as one
// node sees the cluster (the status's "rollout", explain, svcmon, the web
// view): the record, the turns of its nodes and why each turn not taken
// yet waits.
type RolloutStatus struct {
	ID          string `json:"id"`
	Digest      string `json:"digest"`
	Parallelism int    `json:"parallelism"`
	Batches     int    `json:"batches"`
	// State is one of the Rollout* states; Summary the one-line account
	// ("batch 2/3: n3 pending; ok n1 n2", "paused: n2: restart failed: ...").
	State   string `json:"state"`
	Summary string `json:"summary"`
	// OK, Failed and Pending count the rollout's nodes whose turn ended
	// ok, failed, or has not ended (a node down counts as pending: its
	// turn holds the rollout).
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	// Turns are the rollout's nodes in its order.
	Turns []RolloutTurnStatus `json:"turns"`
}

// Ended reports whether the rollout is in a final state.
func (s *RolloutStatus) Ended() bool { return s != nil && s.State != RolloutInProgress }

// RolloutTurnStatus is one node's turn in a rollout.
type RolloutTurnStatus struct {
	Node string `json:"node"`
	// Batch is the node's batch, from 1.
	Batch int `json:"batch"`
	// State is the node's mark in this rollout (delay, restarting,
	// monitoring, ok, failed), "" when it has none yet; Cause the cause
	// of a failed turn.
	State string `json:"state,omitempty"`
	Cause string `json:"cause,omitempty"`
	// RunDigest is the config its instance last started with.
	RunDigest string `json:"run_digest,omitempty"`
	// Why says why a turn not ended is not under way yet (the batch
	// before it, update_delay, its config not received, a freeze, the
	// node down, the rollout paused), or what it does (restarting,
	// monitoring); "" once it ended.
	Why string `json:"why,omitempty"`
}

// ConfigCount is how many running instances of a service run the config
// installed on the node that counts them (Current) and how many another,
// older one (Old).
type ConfigCount struct {
	Current int `json:"current"`
	Old     int `json:"old"`
}
