// Package daemon is the shell of a Haven node: the effects of the node
// core (package node) for real, under the driver shared with the
// simulation (package driver: the loop rules, the heartbeat mapping,
// the admin routing, the tickets, the order of a Ready). One event loop
// feeds the core its inputs through the driver (heartbeat events, ticks,
// the ends of actions, admin requests) and carries out its Ready (the
// effects in core.go), all of it on the daemon's clock (clock.Clock:
// timers and tickers too; clock.Wall only for socket deadlines and CPU
// times): the durable state to the
// persister (written atomically under R/var/, off the loop, before any
// answer is released; a failed write is rolled back), the dataset to the
// heartbeat, the actions to worker goroutines (each owned by the loop,
// with a stop signal and a wait), the typed events to node.log (zap) and
// the events stream (`nodemgr events`, with a "lost N events" marker for
// a slow reader), the answers to the API callers.
//
// What is still the daemon's own, not the core's: the resource drivers
// (its workers only execute the core's node.Action and node.Check and
// report), the config files (configs.go: the core decides config
// distribution, node/configs.go; the daemon writes or removes the files of
// its Ready.Configs, rebuilds the instances and reports each with
// node.ConfigWritten), the local API, the cluster identity and the heartbeat
// incarnation, load and memory.
package daemon
