// Package nodemgr is the `nodemgr` command: the daemon's life cycle
// (run, start, stop, shutdown, status), node freeze/thaw/drain, events and
// the node's own view (docs/contract.md section 4).
package nodemgr
