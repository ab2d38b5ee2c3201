// Package node is the node core: one copy of a node's logic, driven by
// one driver (package driver) in two shells, package daemon (the
// real clock, memberlist, resource drivers, disk, zap, the API) and
// package sim (a fake clock, the in-memory heartbeat network, fake
// resource drivers, a fast, slow or failing disk). It is pure, like
// the decision core (monitor) it calls: no IO, no goroutine, no clock, no
// logging (enforced by monitor's TestCorePackagesArePure).
//
// In the manner of etcd raft's RawNode: a driver changes the core only
// through Step, each input a value (step.go, the list; Now where time
// matters), so that a run's inputs can be traced and replayed on a fresh
// core (driver's Recording); the rest of the exported surface is the
// Ready drain and read-only queries (TestCoreArchitecture holds the
// list). After each input the driver takes a Ready and carries it out in
// its order: write Ready.Persist and report the write with the input
// Persisted{Seq: Ready.PersistSeq} (node/persist: one write at a time,
// the changes made meanwhile handed out in one state when it ends; the
// core holds the
// answers and actions that rest on a state until it is on disk — an
// answer promises what is durable — and on a failed write rolls back to
// what the file holds, fails them and the --wait callers of what was
// undone; the input Barrier is the barrier of a driver's own answers),
// publish, emit the typed Events (events.go: one Go type per kind, with
// its fields), release the Answers (by Ticket), run the actions (Run)
// and the checks (Check), and wake the core at WakeAt.
//
// Its vocabulary (Ready and its orders, Ticket, Answer, State, Event,
// Config, PeerEvent) is package node/vocab, named here by aliases
// (aliases.go); the state of its parts are packages under node/
// (node/persist, node/configdist, node/versionbound, node/quorumsm,
// node/instsm, node/peersm, node/incpass), below package node, which
// composes them. Inside node the files stand on floors: core.go (Core
// and the primitives every rule calls) at the bottom, the rules above
// it, the inputs that dispatch to them (tick.go, step.go) at the top
// (TestCoreShape holds the arrows that run back up).
//
// What it owns today:
//
//   - the durable state (State: frozen flags, local expect, start failed,
//     targets, clears, config versions and tombstones, cluster identity,
//     the Lamport counter, the fencing tokens): nextVersion, witness,
//     setFrozen, setNodeFrozen, setLocalState, restore;
//   - the fencing tokens (fencing.go): a start's new token (Action
//     fencingToken, persisted in the Ready that orders it), the running
//     instance's for its stops and checks, the greatest ones heard from
//     the peers' data;
//   - admin targets and clear requests: adminTarget (start, stop,
//     switch, ..., abort, clear, with or without --wait), setTarget,
//     mergeTargets and mergeClears (newer logical version wins; a target
//     or clear of a service unknown here is not adopted), targetReached
//     and noteTargetFailed (from the decisions), expireWaiters;
//   - the --wait callers, as tickets;
//   - the instances (addInstance, with what the driver says of them:
//     local, runnable, monitored): their status (checkNow, the periodic
//     checks at Tick, checkDone: resources, avail with status.Instance),
//     their monitors, their actions (Ready.Run or the input OwnAction, then
//     actionDone when the commands end; the action ends after the full
//     check that follows, a stop that left a resource up fails, and its
//     ticket is answered), clearLocal;
//   - the restart ladder (ladder.go: a monitored resource found down is
//     restarted alone, Action "restart" with its RID; durable counters;
//     the monitor_action when they are spent: freezestop, switch with the
//     node's exclusion, crash and reboot as Ready.NodeActions);
//   - the decision pass (Orchestrate: monitor.Step over the view of now
//     (Snapshot), the decisions carried out, actions ordered in
//     Ready.Run, the multiple-active resolution (multiactive.go: the
//     multiple_active rule, acted on once every node's data is fresh and
//     stable for ready_period), Ready.WakeAt for the end of a
//     ready window or a --wait deadline);
//   - admin requests: adminTarget (above), adminLocal (--local freeze,
//     thaw, start, stop which freezes first, clear), adminNode (freeze,
//     thaw, drain: answered once every stop ended), beginStop (daemon
//     stop / restart / shutdown); every answer by Ticket, every action
//     run only once the Persist of its Ready is written (else
//     actionAborted);
//   - config distribution (configs.go; what is in flight in node/configdist,
//     a part of its own): the config versions, digests and
//     lineages, the tombstones, which peer config to adopt (newer version
//     wins, then the higher digest; a digest that lies or a config that
//     does not parse is refused once per version), the edits made here
//     (editConfig: answered once every live peer holds them, or failed at
//     ConfirmTimeout) and the rebase of a keyword edit over a concurrent
//     version that won, the deletion (deleteService, or a peer's
//     tombstone: the instance stopped first, then the config removed and
//     the tombstone kept), the check of a file changed outside Haven at
//     start-up (the input LocalFileRead). The core decides and the driver writes:
//     Ready.Configs are the files to write or remove, in order, each
//     reported with configDone; the state records a version only once its
//     file is written, and the answers wait for that state on disk. Text
//     is parsed and edited through Config.Configs (a ConfigCodec: the
//     drivers pass tomlfile.ServiceCodec);
//   - the peers and the node monitor (Started, PeerNews, Ticked): each
//     peer's judged status (package view) and its changes, the peers'
//     targets and clears, compat, rejoin (and the freeze at the end of
//     its grace), when the view changed (ViewChanged, wakeUp), the
//     safety-net pass every 5s;
//   - the quorum (quorum.go): the votes, the arbitrators, the takeover
//     gates and fences, the split_action; and the split decision of a
//     node that lost its fencing disk (disksplit.go: the driver says
//     what it read of the disk, DiskRead).
//
// The node's dataset entry (what the heartbeat publishes) is the core's
// (Dataset: node monitor, frozen, compat, targets, clears, the local
// instances) on top of the driver's part (name, labels, load, memory,
// configs, generation). The driver gives the core, through Local, that
// entry and its service configs, to build the decision core's snapshot.
//
// Still in the drivers: when the driver's own dataset changed (its
// generation, which also triggers a decision pass), the instance stop
// when this node leaves a running service's nodes (daemon.installInstance),
// the cluster identity and the heartbeat incarnation (daemon only,
// written at start-up: the input Durable).
package node
