// Package disk is the disk heartbeat and its SBD-style fencing: the
// members of a cluster share one block device (or file), each writes its
// own beat block every period and reads every block at a random time
// within it (slot.go has the layout and the sealing of the blocks: a host
// that can write the disk but lacks the secret forges neither a beat nor
// a fence). A peer's slot that advances, echoing a recent block of this
// node, is a sign of life on a link of its own (Liveness.NoteLinkAlive);
// a fence announced against this node's run is obeyed (OnFenced) and
// acknowledged once the node stopped its services (Ack); a node fences a
// lost peer through the disk (Fence), done on the target's
// acknowledgement, or once its slot stalled for the wait when it stops by
// itself without the disk (its guard). Every I/O is bounded by the
// timeout: a disk that blocks or fails is lost, never a crash and never a
// life. The time source is a clock.Clock (Config.Clock): the tests drive
// the rounds by hand on a fake clock (writeRound, readRound). The daemon
// runs it (daemon/sbd.go) beside the network heartbeat; docs/operations.md,
// "Disk heartbeat, SBD-style fencing and the watchdog", is the operator's
// view.
package disk
