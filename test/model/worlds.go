package model

import (
	"slices"
	"strings"
)

// Worlds are the worlds of the checker, in the order of docs/model.md.
func Worlds() []*World {
	return []*World{Tie2(), OneVote2(), Plain2(), Majority3(), OnPath2(), Admin2(), Two2(), Ladder2(), Flex3(), Rollout3(), MadeOn(Rollout3(), "n1"), Rollout3SF()}
}

// The worlds of the first slice: 2 or 3 nodes and 1 failover service (an
// app only) running on n1 at the end of the warm-up, quorum on, and the
// node guard on every node (node.guard, on by default).

// OneVote2 is 2 nodes and Haven's one-vote arbitrator (no fence command):
// the moves are time, crashes and daemon starts, a partition and its
// heal, the frames of one node lost to the other, a daemon paused for 6s,
// a node cut off from the arbitrator and back, a failed stop. Its
// stops take 5s, longer than the margins of the arbitrator's lease: the
// takeover must wait for the lost owner's stop budget.
func OneVote2() *World {
	return &World{
		Name: "onevote2",
		Setup: []string{
			"cluster n1 n2 hb.timeout=3s hb.interval=1s ready_period=2s quorum=true split_action=stop guard=true",
			"arbitrator a timeout=1s onevote",
			"service web nodes=n1,n2 orchestrate=ha stop=5s",
		},
		Warmup:       "run 12s",
		Nodes:        []string{"n1", "n2"},
		Service:      "web",
		Step:         "run 3s",
		Arbitrator:   "a",
		StopFailures: true,
		OneWay:       true,
		Pause:        "6s",
	}
}

// Tie2 is 2 nodes with quorum on and no arbitrator: a partition leaves
// each side 1 vote of 2, a tie, which loses. The moves are time, crashes,
// daemon stops (maintenance) and starts, a partition and its heal.
func Tie2() *World {
	return &World{
		Name: "tie2",
		Setup: []string{
			"cluster n1 n2 hb.timeout=3s hb.interval=1s ready_period=2s quorum=true split_action=stop guard=true",
			"service web nodes=n1,n2 orchestrate=ha",
		},
		Warmup:      "run 12s",
		Nodes:       []string{"n1", "n2"},
		Service:     "web",
		Step:        "run 3s",
		DaemonStops: true,
	}
}

// Majority3 is 3 nodes with quorum on and no arbitrator: a node cut off
// alone holds 1 vote of 3 and stops; the 2 others hold the majority.
// The moves are time, crashes, daemon stops and starts, one node
// partitioned from the two others, and the heal, a node's state disk
// failing (every write) and repaired.
func Majority3() *World {
	return &World{
		Name: "majority3",
		Setup: []string{
			"cluster n1 n2 n3 hb.timeout=3s hb.interval=1s ready_period=2s quorum=true split_action=stop guard=true",
			"service web nodes=n1,n2,n3 orchestrate=ha stop=5s",
		},
		Warmup:      "run 12s",
		Nodes:       []string{"n1", "n2", "n3"},
		Service:     "web",
		Step:        "run 3s",
		DaemonStops: true,
		DiskFaults:  true,
	}
}

// Plain2 is 2 nodes and a plain arbitrator (it answers whoever asks), no
// fence command: a node that lost its peer cannot tell whether the peer
// kept the quorum too, so it never takes over (safe, not available).
func Plain2() *World {
	w := OneVote2()
	w.Name = "plain2"
	w.Setup[1] = "arbitrator a timeout=1s"
	w.OneWay, w.Pause = false, ""
	return w
}

// WithoutGuard is w with node.guard off on every node (the previous
// behaviour: a daemon that stops leaves its services running, and only
// its split_action, which a stopped daemon does not run, stops them),
// daemon stops offered or not.
func WithoutGuard(w *World, daemonStops bool) *World {
	c := *w
	c.Name = w.Name + "-noguard"
	c.Setup = slices.Clone(w.Setup)
	c.Setup[0] = strings.Replace(c.Setup[0], " guard=true", " guard=false", 1)
	c.DaemonStops = daemonStops
	return &c
}

// OnPath2 is onevote2's cluster where the faults are those of frames:
// someone on the path holds back every frame of one node to the other
// and releases them later (newest first), or holds back one frame (the
// next ones overtake it), loses one, or delivers the last one twice; with
// crashes and daemon starts, a partition and its heal.
func OnPath2() *World {
	w := OneVote2()
	w.Name = "onpath2"
	w.Arbitrator, w.StopFailures, w.OneWay, w.Pause = "", false, false, ""
	w.Withhold, w.Frames = true, true
	return w
}

// Admin2 is onevote2's cluster with admin actions on web (switch to the
// other node, stop, start, freeze, thaw, on a node whose daemon runs)
// among crashes, daemon starts, a partition and its heal, and a node's
// state disk failing (every write) and repaired: an acknowledged action
// must survive them.
func Admin2() *World {
	w := OneVote2()
	w.Name = "admin2"
	w.Arbitrator, w.StopFailures, w.OneWay, w.Pause = "", false, false, ""
	w.DiskFaults = true
	w.Admin = []string{"switch", "stop", "start", "freeze", "thaw"}
	return w
}

// Two2 is onevote2's cluster with two failover services that start on
// different nodes (web on n1, db on n2, by the order of their nodes): a
// split leaves each side the owner of one, and the side that keeps the
// arbitrator's vote must take the other's over, after its self-stop
// deadline, while the other side stops its own. The moves are those of
// onevote2 without the one-way losses and the pauses (the failed stop is
// web's).
func Two2() *World {
	w := OneVote2()
	w.Name = "two2"
	w.Setup = append(slices.Clone(w.Setup), "service db nodes=n2,n1 orchestrate=ha stop=5s")
	w.Also = []string{"db"}
	w.OneWay, w.Pause = false, ""
	return w
}

// Ladder2 is onevote2's cluster where web's app is monitored, with a
// restart ladder of one restart 1s after a failure and monitor_action
// none (the default: once its restarts are spent, the node gives up on
// web). The moves are time, the death of web's app on a node where it
// runs, the next restart on a node failing, crashes and daemon starts.
// The ladder restarts the app only on the node where the service runs and
// ran last: a node that gave up, or whose instance is down while web runs
// elsewhere, expects to run it no more.
func Ladder2() *World {
	w := OneVote2()
	w.Name = "ladder2"
	w.Setup = slices.Clone(w.Setup)
	w.Setup[2] += " monitor=true restart=1 restart_delay=1s"
	w.Arbitrator, w.StopFailures, w.OneWay, w.Pause = "", false, false, ""
	w.NoPartition = true
	w.Kills, w.RestartFailures = true, true
	return w
}

// WithoutCrashes is w without the crashes (the deaths of an app, the
// failed actions and the other faults stay).
func WithoutCrashes(w *World) *World {
	c := *w
	c.Name += "-nocrash"
	c.NoCrash = true
	return &c
}

// Flex3 is 3 nodes with quorum on (3 votes, no arbitrator) and one flex
// service, web, of flex_target 2 = flex_max 2 (an app only): it runs on n1
// and n2 at the end of the warm-up, n3 is the spare. The moves are time,
// crashes, daemon stops (maintenance) and starts, one node partitioned
// from the two others and the heal, a daemon paused 6s, and the death of
// web's app on a node where it runs. Its stops take 5s, so that a lost
// node's instance still runs while the others may claim its slot.
func Flex3() *World {
	return &World{
		Name: "flex3",
		Setup: []string{
			"cluster n1 n2 n3 hb.timeout=3s hb.interval=1s ready_period=2s quorum=true split_action=stop guard=true",
			"service web nodes=n1,n2,n3 orchestrate=ha topology=flex flex_target=2 flex_max=2 stop=5s monitor=true",
		},
		Warmup:      "run 12s",
		Nodes:       []string{"n1", "n2", "n3"},
		Service:     "web",
		Flex:        2,
		Step:        "run 3s",
		DaemonStops: true,
		Pause:       "6s",
		Kills:       true,
	}
}

// Rollout3 is flex3's cluster (3 nodes, quorum on, 3 votes) whose flex
// service web, of flex_target 2 = flex_max 2 (n1 and n2 up, n3 the
// spare, stop-first), is rolled out at the end of the warm-up: n2 edits
// a keyword (priority, which changes the config's digest) and asks a
// rollout, one node at a time (update_parallelism 1), each restart
// watched for update_monitor 4s (a failure then, or a failed restart,
// rolls the config back: update_failure_action rollback, ratio 0). The
// exploration starts as n1 restarts for its turn (then n2). The moves
// are time, crashes and daemon starts, one node partitioned from the two
// others and the heal, a daemon paused 6s, the death of web's app on a
// node where it runs (within a turn's update_monitor: the turn fails),
// and the next restart on a node failing.
func Rollout3() *World {
	return &World{
		Name: "rollout3",
		Setup: []string{
			"cluster n1 n2 n3 hb.timeout=3s hb.interval=1s ready_period=2s quorum=true split_action=stop guard=true",
			"service web nodes=n1,n2,n3 orchestrate=ha topology=flex flex_target=2 flex_max=2 stop=5s monitor=true update_monitor=4s",
		},
		Warmup:          "run 12s",
		Then:            []string{"n2: svcmgr -s web set --kw priority=50", "run 1s", "n2: svcmgr -s web rollout"},
		Nodes:           []string{"n1", "n2", "n3"},
		Service:         "web",
		Flex:            2,
		Step:            "run 3s",
		Pause:           "6s",
		Kills:           true,
		RestartFailures: true,
		Rollout:         1,
		Least:           1,
	}
}

// MadeOn is the rollout world w with its edit and rollout made on node n
// (rollout3's are made on n2, whose turn comes second: a node cut off in
// the first turn sees the maker lost; made on n1, the maker takes the
// first turn itself, and its own failure and crash are the maker's).
func MadeOn(w *World, n string) *World {
	c := *w
	c.Name += "-" + n
	c.Then = []string{n + ": svcmgr -s web set --kw priority=50", "run 1s", n + ": svcmgr -s web rollout"}
	return &c
}

// Rollout3SF is rollout3 in start-first order (update_order
// start-first): web has flex_target 2 and flex_max 3, up on n1 and n2,
// n3 the spare. A turn does not restart its instance: it leaves its slot
// to a replacement that the best spare claims and starts, and stops once
// flex_target instances are up elsewhere (n1's turn: n3 replaces it, then
// n2's: n1 does). Never more than flex_max up; on a path without a
// fault, never fewer than flex_target. Its starts take 4s (a replacement
// is up 6s after its claim, the ready period's 2s and its start: the
// leaving instance's stop, 5s, must wait for it). The moves are
// rollout3's.
func Rollout3SF() *World {
	w := Rollout3()
	w.Name = "rollout3sf"
	w.Setup = slices.Clone(w.Setup)
	w.Setup[1] = "service web nodes=n1,n2,n3 orchestrate=ha topology=flex flex_target=2 flex_max=3 update_order=start-first start=4s stop=5s monitor=true update_monitor=4s"
	w.Flex, w.Least = 3, 2
	return w
}
