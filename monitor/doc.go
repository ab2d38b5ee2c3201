// Package monitor is the orchestrator's decision core (docs/behaviour.md sections
// 1, 2, 5, 6, 7, 8; the transition table of 1.7 and the affinity tables of 6). For
// the local node, Step takes a Snapshot of everything the node knows and
// returns, for each service with a local instance, the next monitor state,
// the action to run, and why.
//
// # Purity
//
// monitor, placement, affinity, constraints, view, status and dataset
// start no goroutine, read no clock (time is Snapshot.Now), run no command,
// open no socket or file and log nothing. TestCorePackagesArePure enforces
// it over everything they reach (go list -deps): no net, os/exec, zap,
// memberlist or TOML parser anywhere, no os or syscall imported by any
// non-standard package (the os that fmt brings along aside), no clock,
// timer or file call and no go statement in our packages' source. That is
// why config is pure and its files are read by config/tomlfile.
//
// # How the shell drives Step
//
// Build a Snapshot:
//   - Now: the local clock.
//   - Local, ClusterNodes (sorted member names).
//   - Nodes: every member's NodeView. Status is the local conclusion (up,
//     down, maintenance, shutting); Data is the node's last gossiped data,
//     the local node's own current data included (Status up, or
//     maintenance/shutting while it says so). Keep the last data of a node
//     in maintenance until maintenance_grace_period ends, then mark it down.
//     A down node's instances count as down and idle.
//   - The local instances' monitors are in
//     Nodes[Local].Data.Services[svc].Monitor, frozen flags in
//     Instance.Frozen and Node.Frozen, the merged effective admin targets in
//     Nodes[Local].Data.Targets[svc] (merge by dataset.Version, never by
//     wall clock).
//   - Services (installed configs), ConstraintOK (precomputed per service
//     and node with placement.EvalConstraints when configs or labels
//     change), Compat (all members announce the same compat version),
//     ReadyPeriod (node.ready_period; 0 means 16s), FastAck
//     (node.ready_fast_ack, while the node may use it: quorum held).
//
// Call Step on every relevant event (heartbeat data change, node up/down,
// action end, config or target change) and on a periodic tick; also at the
// earliest Decision.Deadline (the end of a ready window).
//
// For each Decision:
//   - store Decision.ReadyAck in the local instance (Instance.ReadyAck) and
//     publish it when it changes;
//   - store Decision.Monitor as the local instance's monitor (it carries
//     GlobalExpect for display, StateSince set to Now on state changes),
//     PlacementLeader and Flags in the instance, and gossip them;
//   - when Changed, log once: svc, Reason, state, action;
//   - run Action once: ActionStart / ActionStop run the instance's resources
//     (asynchronously; the monitor state stays starting / stopping, which
//     Step leaves alone, until the shell reports the end); ActionFreeze /
//     ActionThaw set and persist Instance.Frozen;
//   - report the end of an action by replacing the local monitor with
//     AfterStart(m, ok, now), AfterStop(m, ok, now) or AfterFreeze(m, now),
//     refresh the instance status (avail) at once, then run Step again;
//   - when TargetReached, clear the target (a "none" target with a newer
//     version) and answer the --wait callers (exit 1 naming the unknown
//     nodes when TargetUnknown is set); when TargetFailed, answer them with
//     it (the target stays);
//   - report a failed action's cause with Failure (InstanceMonitor.Error).
//
// The shell also applies Clear for "svcmgr clear" and Reset to every local
// monitor when the daemon starts (an action cannot survive a restart).
// Actions started by the admin outside the orchestrator ("stop --local",
// "start --local") are the shell's; it sets the states the same way.
//
// # Rules (summary)
//
// Without target, for orchestrate=ha (and start, where the leader is the
// natural leader): a node enters ready when it is the placement leader, the
// service is down everywhere, no instance is warn or in a *ing state,
// nothing is frozen on it, compat holds and the parents are up (otherwise
// "wait parents"). Ready lasts ReadyPeriod and is cancelled (back to idle)
// when any of these stops holding or a peer with a better rank is ready.
// Then "starting" with ActionStart, unless a worse claim is still ready on a
// live node (it may not have seen ours: the start waits for it to back off);
// a single-node service skips ready. With FastAck, each node publishes the
// peer's claim it does not contest (Decision.ReadyAck) and a claimer starts
// as soon as every live node of the service acks its claim (fastack.go).
// "start failed" leaves the candidates and clears itself once the service is
// up (avail up) somewhere. orchestrate=no, placement=none or compat false:
// nothing automatic.
//
// Affinities (package affinity): a local or peer instance in ready or
// starting claims its node against the anti-affinity rules of the other
// services (affinity.Yields breaks the tie between mutually anti-affine
// services), so a service that finds its ready node claimed cancels its
// ready and the next candidate takes it. Within one Step the services are
// decided in name order and a later one sees the local claims made by the
// earlier ones.
//
// Flex services (flex.go, docs/behaviour.md 10): the same window per
// instance; a node claims only while it is among the best candidates
// without a running instance that fill the free slots of flex_target, and
// starts at the window's end only when every instance it sees running or
// claiming, and its own, fit in flex_target; the instances beyond the
// target stop on the least preferred nodes.
//
// Targets suspend the automatic orchestration of their service:
//   - started: thaw every instance, then the placement leader starts it at
//     once (no ready window), whatever orchestrate/placement/compat;
//   - stopped: freeze every instance; once all are frozen, stop where it
//     runs, after the children are down ("wait children");
//   - placed@NODE: stop everywhere but NODE, then start on NODE (no
//     constraint or affinity check: the admin chose), thaw every instance;
//   - placed: the same toward the giveback destination (ha: best placeable
//     node; otherwise the natural leader);
//   - frozen / thawed: freeze / thaw every instance.
//
// Reached is judged on every node of the service: a node whose data is not
// alive (down, unknown) or whose instance was not checked yet is unknown,
// except a node shut down cleanly (its last data: shutting, the instance
// down), which runs nothing and counts as down. Nothing is started for a
// target, and it is not reached, while the data of a live node of the
// service (not in maintenance nor shutting, hosting an instance) does not
// show it (its target is older): that copy was sent before the node
// adopted the target, and may be older than what the target was decided
// on (unacked).
// Stopped and frozen targets are not reached while a node is unknown (its
// instance may still run; the target waits for it, so that it complies
// when it comes back); started, placed and thawed targets are reached on
// the known nodes (so that the orchestration they suspend goes on) with
// Decision.TargetUnknown naming the others, so that no --wait caller is
// told more than is known. A stopped or frozen target that waits only for
// nodes shut down cleanly is Decision.TargetPending: not reached (they
// comply when they come back), but their --wait callers are answered.
// Decision.TargetReached is true on every node
// that sees it. Decision.TargetFailed says when a failed state blocks the
// target (a start failed on every node that could start it, a stop failed
// where the service still runs, a start failed on a move's destination).
//
// # Explain
//
// Explain(s, svc, start) runs the same Step pass over s with the ranking's
// verdicts turned on for svc only, and returns what `svcmgr explain` shows:
// every node's verdict, the leader, the running nodes, and the local
// monitor with the decision Step makes now, its reasoning, what blocks the
// automatic start, the end of the ready window, every parent not up, every
// child not down and the target in progress. With start, s is first
// changed to have svc down and at rest on every node (a start now).
//
// # Instances without status
//
// An instance whose resources have no check is n/a: it cannot be observed.
// Once started (local expect "started") it counts as up everywhere the
// orchestration asks whether the service runs (EffectiveAvail): it is not
// started again, and for ha no other node starts it while its node is
// alive; stopped, it counts as down.
package monitor
