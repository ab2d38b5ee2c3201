// Package dataset holds the plain data every node knows of every other node:
// node state, instance status, monitor states and admin targets, plus the
// cluster status object of the contract (section 5).
//
// It is pure data: no IO, no clock, no goroutines. The daemon owns the live
// copy; heartbeat carries it between nodes; monitor reads snapshots of it.
package dataset
