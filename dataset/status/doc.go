// Package status aggregates availability statuses: the resources of one
// instance into the instance's avail and overall statuses, and the instances
// of a failover service into the service's status (docs/behaviour.md section 9).
//
// It is pure: no IO, no clock, no logging. Both the daemon (for what it
// announces) and svcmon (for what it prints) use it, so every node and every
// client computes the same answer from the same data.
package status
