// Package sim is the in-process simulation of a Haven cluster (the
// second of the three rings of tests, docs/architecture.md): N nodes in one process, one fake clock
// (clock.Fake) and the heartbeat's in-memory network
// (heartbeat.MemNetwork), so that the real heartbeat core decides liveness
// and carries the data, the real view rules judge the peers, and the real
// decision core (monitor.Step) decides. Only the shell is modelled, and
// kept small. It runs the behaviour catalogue (docs/behaviour.md sections 1, 2, 3,
// 5, 6, 7, 8) deterministically, at about two thousand simulated seconds
// per real second.
//
// # The node core and the driver
//
// A node's logic is the real node core's (package node), driven by the
// same driver as the daemon's (package driver: the order of a Ready,
// the tickets, the loop rules, the heartbeat mapping, the admin routing,
// the core's config). Every input reaches the core through Core.Step, as
// in the daemon: the durable state and its writes, targets, clears,
// frozen flags, admin requests, the instance monitors, the decision pass
// (with the multiple-active watch and Ready.WakeAt), the status checks and
// the ends of actions, the peers and their judged status, compat and
// rejoin are all the core's. The simulation implements only the driver's
// effects (daemon.go, admin.go, disk.go). Every timeline line about a
// service, a peer or the node monitor is one of the core's typed events,
// with the text the daemon writes to node.log and the events stream.
//
// What the shell here does itself (daemon.go), as package daemon does:
// startDaemon (daemon.New + Run up to the loop: install the instances,
// join the heartbeat, Start, first publish and check); process (one turn
// of daemon.loop: heartbeat events one by one, action ends, the step
// timer, the 500ms tick; after each, a decision pass when the dataset
// changed or the core's view did; publish); the fake resource driver
// (runCheck: the config's resources, by their names, or app#main when it
// has none, all up where the cluster's truth says it runs; startAction, actionDone: an action takes the service's
// simulated duration, fails when scripted); localNode, beginStop (the
// core's BeginStop), readyToExit; and the admin entry points (admin.go:
// serviceAction, nodeAction: they hand the request to the core; an answer
// that comes when an action ends is a timeline line 'answer to "stop":
// ...').
//
// Config distribution is the core's too: the services of the scenario are
// installed on every machine before the daemons start (Node.files, the
// machine's service directory, version zero); svcmgr set, unset and delete
// go through the core (its ConfigRequest and Deletion inputs), whose Ready.Configs
// the shell writes to the machine at once (applyConfig); the versions
// and tombstones travel with the heartbeats as in the daemon.
//
// Departures, on purpose: no create or edit config (set, unset and delete
// only), no file changed outside Haven (no LocalFileRead input), no
// stop of a running instance when a set removes its node from the
// service's nodes (the expectations read the scenario's nodes); a
// service's resources are up or down together (a scenario's service has
// one, app#main; a snapshot's, those of its config), no warn; monitored
// with restarts when the config says so (a service line's monitor=,
// restart=, restart_delay=); no resource that stays up after a stop that
// succeeded: "fail ... stop"
// scripts a stop failure); a status check takes no time; actions take the
// configured duration and succeed unless scripted to fail; load and memory
// are zero, so "load avg" and "score" tie and break by name. The state
// disk is fast unless scripted slow or failing (disk.go: held answers,
// group commit, roll back). Quorum (cluster line
// quorum=true split_action=stop), arbitrators,
// fence commands, one-way loss and daemon pauses are modelled in
// quorum.go (see there for the script lines), the node guard in guard.go; a node action (crash,
// reboot) is recorded, not run, and a fence that succeeds powers the
// fenced machine off. Within one turn the loop's channels are taken in a fixed order
// (heartbeat events, action ends, step timer, tick), and the daemons take
// their turns in node-name order until none publishes anything new; time
// advances by at most one heartbeat beat period between turns, stopping at
// every daemon's own due time.
//
// The truth about the resources is the cluster's, not a daemon's: a crash
// kills the machine's services; a daemon stop leaves them running.
//
// # Scenario files
//
// testdata/scenarios/NAME.txt is a script; NAME.golden is its output,
// checked by TestScenarios and rewritten by "go test ./sim -update" (review
// the diff). One command a line; # starts a comment; double quotes group
// words ("start failed", placement="load avg"). Setup lines come first:
//
//	cluster n1 n2 n3 [hb.timeout=3s hb.interval=1s ready_period=2s
//	        maintenance_grace_period=6s rejoin_grace_period=10s start=1s stop=1s
//	        ready_fast_ack=false guard=false guard_lease=12s]
//	node n3 [compat=2] [label.zone=b] [capacity_cpu=4] [capacity_mem=8GiB]
//	service web nodes=n1,n2,n3 orchestrate=ha [parents=db] [start=5s] ...
//	        [monitor_action=switch monitor=true restart=2 restart_delay=1s
//	        restart_delay_max=8s restart_window=1m]
//
// A scenario may start from a real cluster instead: "snapshot FILE" (the
// first line, in place of the cluster, node and service lines; FILE is
// relative to the scenario's directory) builds the cluster that
// `svcmgr simulate --save FILE` saw, starts the daemons of its live nodes
// with every service where it ran and lets it settle before the first
// command (testdata/scenarios/whatif_from_snapshot.txt).
//
// The values shown are the defaults. A service line's key=value pairs are
// the DEFAULT keywords of the service config (lists are comma-separated;
// monitor, restart, restart_delay, restart_delay_max and restart_window go
// to its one resource, app#main),
// parsed by tomlfile.ParseService; start= and stop= set the simulated action
// durations of that service. Every daemon starts at time 0, with the first
// command. Commands run at the current simulated time:
//
//	run 10s                                  advance the time
//	crash n1                                 the machine dies (no clean stop)
//	kill n1 web                              web's app dies on n1 (the next check says down)
//	n1: nodemgr daemon start [compat=N]      (re)start the daemon (rejoin)
//	n1: nodemgr daemon stop                  maintenance, services keep running
//	n1: nodemgr daemon shutdown              stop the local instances, shutting, leave
//	n1: nodemgr daemon restart [compat=N]    stop, then start
//	n1: nodemgr freeze | thaw | drain        the node (drain: freeze, stop what runs here)
//	n1: svcmgr -s web ACTION [--local] [--wait [--time 5s]] [--to N] [--node N]
//	n1: svcmgr -s web start --local --force  a second copy, on purpose
//	    ACTION: start stop freeze thaw takeover switch giveback abort clear restart delete
//	n1: svcmgr -s web set --kw K=V [--kw ...]  | unset --kw K   a keyword edit (config distribution)
//	partition n1 | n2 n3                     cut every link between the sides
//	heal                                     remove every partition
//	fail n1 web start|stop|restart [COUNT|off] the next COUNT runs fail (default: all)
//	disk n1 slow 2s | fail | ok              n1's state writes take 2s, fail, or are
//	                                         fast and good again (disk.go)
//	withhold n1 n2 [COUNT] | release n2      frames of n1 to n2 held back on the path
//	                                         (every one, or the next COUNT), delivered
//	                                         late, newest first (onpath.go)
//	lose n1 n2 COUNT | duplicate n1 n2       the next frames lost, the last one again
//
// Expect lines assert at the current time; a failed expect fails the test
// and is marked FAILED in the output:
//
//	expect web up on n2          web's resources run on exactly these nodes (n1,n2)
//	expect web up on 1 node      ... on that many nodes
//	expect app at most 2 up      never more than 2 nodes ran app at once so far
//	                             (a flex service: its flex_max)
//	expect app started within 2  no start of app began while it was active (running
//	                             or starting) on 2 other nodes or more (flex_max 2)
//	expect web down              ... nowhere
//	expect app capacity short on "n3: cpu 1 of 2 requested, needs 1.5"
//	                             svcmgr explain's line, as the first running daemon
//	                             (by name) explains app ("none": no node short)
//	expect web target none       every running daemon of web sees this target
//	expect web@n1 "start failed" n1's monitor state of web (or frozen, thawed, leader,
//	                             excluded, "not excluded", "gave up", "not gave up",
//	                             "remaining N": app#main's restarts left)
//	expect web@n1 token 4        HAVEN_FENCING_TOKEN of web's last start on n1
//	                             (the one on n1's disk too)
//	expect web@n1 keyword priority 50   the value of a keyword in n1's installed config
//	expect web@n1 deleted        no config on n1, a tombstone on its disk
//	expect n3 frozen             node frozen (an admin, the rejoin rule), split-frozen
//	                             (its split_action: a quorum vote lost) or thawed (neither)
//	expect n2 sees n1 down       n2's conclusion about n1 (up, down, maintenance, shutting)
//	expect n1 monitor rejoin     n1's node monitor state
//	expect n1 daemon stopped     or running
//	expect web tokens forward    every start of web took a fencing token above every one
//	                             handed out for web before it (starts.go)
//	expect web acks kept         every admin target acknowledged is kept by the
//	                             node that answered (observers.go)
//	expect n1 never revived      no node saw n1 up while it did not run
//	expect web rolled back once  no rollout of web undone by two rollbacks (every
//	                             rollback record that reached a disk counts: rollouts.go)
//	expect web restarts within 1 no restart of a whole instance (a rollout's turn)
//	                             began while one was in flight on 1 other node or more
//	expect web configs converged every node's disk holds one config of web, and
//	                             every instance up runs it
//
// The output is the timeline (time, node, service, the change and why:
// monitor states, actions, avail, node monitor and frozen changes, each
// node's view of its peers, targets reached, compat messages), the
// commands (">") with their answers, the expect results, and the final
// state.
//
// A Session (session.go) runs a scenario one line at a time, and its
// cluster answers between two lines (Core, Machine, DiskState, AppToken,
// UpOn, StartOverlaps, StartsCrowded, TokensBackwards, Acks, LostAcks, Revivals, Withheld, PathState, Rollbacks,
// RestartsCrowded, FewestUp, Unconverged): the model checker (test/model, docs/model.md)
// rebuilds each world it explores that way.
//
// # Adding a scenario
//
// Write testdata/scenarios/NAME.txt with a comment saying which rule of
// docs/behaviour.md it shows, expect lines for what matters, run
// "go test ./sim -run TestScenarios/NAME -update", read NAME.golden and
// commit both.
package sim
