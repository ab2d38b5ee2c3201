// Package node is the node core: one copy of a node's logic, driven by
// one driver (package node/driver) in two shells, package daemon (the
// real clock, memberlist, resource drivers, disk, zap, the API) and
// package sim (a fake clock, the in-memory heartbeat network, fake
// resource drivers, a fast, slow or failing disk). It is pure, like
// the decision core (monitor) it calls: no IO, no goroutine, no clock, no
// logging (enforced by monitor's TestCorePackagesArePure).
//
// In the manner of etcd raft's RawNode: every input is a value handed to
// Core.Step (step.go lists the types: Started, PeerNews, Ticked, Woken,
// Pass, Persisted, Acted, Checked, TargetRequest, LocalRequest,
// ConfigRequest, ...), carrying Now where time matters; the driver hands
// each one to Driver.Trace first, so that a run's inputs can be logged and
// replayed. A request's input returns a Ticket, answered later in a
// Ready. After the inputs, the driver takes the Ready and carries it out
// in its order (Driver.Apply): write Ready.Persist and report the write
// with a Persisted input (persist.go: one write at a time, the changes
// made meanwhile handed out in one state when it ends; the core holds the
// answers and actions that rest on a state until it is on disk, since an
// answer promises what is durable, and on a failed write rolls back to
// what the file holds, failing them and the --wait callers of what was
// undone; a Barrier input is the barrier of a driver's own answers),
// publish, emit the typed Events (events.go: one Go type per kind, with
// its fields), release the Answers (by Ticket), run the actions (Run),
// the checks (Check), the probes and fences, write the config files
// (Configs), and wake the core at WakeAt (a Woken input). The queries
// (Instance, Peer, Status, Snapshot, Dataset, ...) are methods: they
// change nothing. Three inputs are still methods the shells call
// directly, outside Step and the trace: CheckLocalFile (a service file
// changed outside Haven, at start-up), MarkDurable (the cluster identity
// and the heartbeat incarnation, written at start-up) and RunAction (a
// stop or start the shell itself needs: a deletion, a node removed from a
// service's nodes).
//
// What it owns:
//
//   - the durable state (State: frozen flags, local expect, start failed,
//     targets, clears, config versions and tombstones, cluster identity,
//     the Lamport counter, the fencing tokens), written through
//     Ready.Persist and rolled back on a failed write;
//   - the fencing tokens (fencing.go): a start's new token (Action
//     FencingToken, persisted in the Ready that orders it), the running
//     instance's for its stops and checks, the greatest ones heard from
//     the peers' data;
//   - admin targets and clear requests (targets.go: TargetRequest for
//     start, stop, switch, ..., abort, clear, with or without --wait; the
//     peers' targets and clears merged, newer logical version wins; a
//     target or clear of a service unknown here is not adopted; reached
//     or failed from the decisions; the --wait callers as tickets, ended
//     at their deadline);
//   - the instances (instances.go: InstanceInstalled and InstanceRemoved,
//     with what the driver says of them: local, runnable, monitored):
//     their status (CheckOrdered, the periodic checks at Ticked, Checked:
//     resources, avail with status.Instance), their monitors, their
//     actions (Ready.Run, then Acted when the commands end; the action
//     ends after the full check that follows, a stop that left a resource
//     up fails, and its ticket is answered);
//   - the restart ladder (ladder.go: a monitored resource found down is
//     restarted alone, Action "restart" with its RID; durable counters;
//     the monitor_action when they are spent: freezestop, switch with the
//     node's exclusion, crash and reboot as Ready.NodeActions);
//   - the decision pass (orchestrate.go, a Pass input: monitor.Step over
//     the view of now (Snapshot), the decisions carried out, actions
//     ordered in Ready.Run, the multiple-active resolution (multiactive.go:
//     the multiple_active rule, acted on once every node's data is fresh
//     and stable for ready_period), Ready.WakeAt for the end of a ready
//     window or a --wait deadline); incremental.go runs a pass over the
//     services a change can move when only the view changed;
//   - admin requests (admin.go: LocalRequest for --local freeze, thaw,
//     start, stop which freezes first, clear; NodeAdmin for the node's
//     freeze, thaw and drain, answered once every stop ended; Stopping
//     for daemon stop, restart and shutdown); every answer by Ticket,
//     every action run only once the Persist of its Ready is written
//     (else it is aborted);
//   - the quorum (quorum.go, onevote.go, guard.go): the live members'
//     votes and the arbitrators' answers (Voted, Granted), split_action, the
//     takeover gate of a lost peer (its self-stop deadline, its guard,
//     the fence: Ready.Fences, then FenceEnded);
//   - config distribution (configs.go, configedit.go): the config
//     versions, digests and lineages, the tombstones, which peer config to
//     adopt (newer version wins, then the higher digest; a digest that
//     lies or a config that does not parse is refused once per version),
//     the edits made here (ConfigRequest: answered once every live peer
//     holds them, or failed at ConfirmTimeout) and the rebase of a keyword
//     edit over a concurrent version that won, the deletion (Deletion, or
//     a peer's tombstone: the instance stopped first, then the config
//     removed and the tombstone kept). The core decides and the driver
//     writes: Ready.Configs are the files to write or remove, in order,
//     each reported with ConfigWritten; the state records a version only
//     once its file is written, and the answers wait for that state on
//     disk. Text is parsed and edited through Config.Configs (a
//     ConfigCodec: the drivers pass tomlfile.ServiceCodec);
//   - the peers and the node monitor (Started, PeerNews, Ticked): each
//     peer's judged status (package view) and its changes, compat, rejoin
//     (and the freeze at the end of its grace), when the view changed
//     (ViewChanged), the safety-net pass (peers.go, fullPassPeriod).
//
// The node's dataset entry (what the heartbeat publishes) is the core's
// (Dataset: node monitor, frozen, compat, targets, clears, the local
// instances) on top of the driver's part (name, labels, load, memory,
// configs, generation).
//
// The node/testdata files are the core's datadriven tests (package
// node/datadriven runs them, datadriven_test.go lists the commands): a
// list of inputs, each followed inline by the whole Ready it produced.
// docs/architecture.md tells how to add an input.
package node
