// Package daemon is the shell of a Haven node: one event loop owns all the
// node's mutable state (configs, instance states, frozen flags, targets,
// peers). API requests, action completions, resource check results and
// timer ticks arrive as events on its queue. It runs resource actions in
// worker goroutines (each owned by the loop, with a stop signal and a wait),
// persists durable state atomically under R/var/, serves the local API on
// R/run/daemon.sock and logs through zap.
package daemon
