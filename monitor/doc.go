// Package monitor is the orchestrator's decision core: for the local node,
// Step takes a snapshot of what the node knows and returns, per service
// with a local instance, the next monitor state, the action to run and why.
package monitor
