package planted

// The defects that can be planted (each was a real one, or is the rule a
// fix stands on).
const (
	// TieWins: a quorum vote that ties (2 nodes, no arbitrator, cut
	// in two) counts as a win, so that both sides survive.
	TieWins = "tie-wins"
	// NoStopDeadline: the takeover gate does not wait for the lost
	// peer's self-stop deadline (its stop budget) once the peer's side
	// certainly lost the quorum.
	NoStopDeadline = "no-stop-deadline"
	// PlainVoteOurs: the takeover gate counts the vote of a plain
	// arbitrator as this side's alone, though a plain arbitrator answers
	// both sides of a 2-node split.
	PlainVoteOurs = "plain-vote-ours"
	// LateAlive: the heartbeat takes a frame of a peer newer than every
	// one heard of its run as a sign of life whatever its lag and its
	// echo's proof say, so that frames held back on the path and
	// delivered late bring a dead or cut-off peer up again.
	LateAlive = "late-alive"
	// AckFailedWrite: an answer that reported a success keeps it when the
	// state write it waited for fails (the change is rolled back, the
	// admin is told it was done).
	AckFailedWrite = "ack-failed-write"
	// GaveUpKeeps: a node whose restart ladder gave up on a service, or
	// whose instance is down while the service runs on another node,
	// keeps its expectation to run it (local expect started), so that
	// when the app dies where the service runs, this node's ladder
	// restarts it too.
	GaveUpKeeps = "gave-up-keeps"
	// FlexNoGate: a flex service's free slot, left by a node lost to
	// the others, is claimed without waiting for the takeover gate (the
	// lost node's self-stop deadline, or its fence), while that node may
	// still run its instance: flex_max+1 up.
	FlexNoGate = "flex-no-gate"
	// RollbackNoQuorum: the automatic rollback of a failed rollout is
	// made by the node that speaks for it whether or not its side holds
	// the quorum, so that a node cut off from the majority rolls the
	// config back on the nodes it sees.
	RollbackNoQuorum = "rollback-no-quorum"
	// ReplacedEarly: in a start-first rollout, the instance that left
	// its slot stops once flex_target instances are up counting itself,
	// not once its replacement is up elsewhere: one instance short.
	ReplacedEarly = "replaced-early"
)
