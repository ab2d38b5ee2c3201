// Package resource holds the resource drivers (one per type: app, ip) behind
// the small Driver interface, and Set, which runs the resources of one
// instance in order (start: ip then app; stop: reverse). This is shell code:
// it runs commands and changes addresses. The daemon calls it; the pure core
// never does.
package resource
