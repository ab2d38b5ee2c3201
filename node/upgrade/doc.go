// Package upgrade holds the rules of a rolling upgrade, as pure functions:
// the format versions this build reads and writes, the cluster feature
// level (the lowest format version every member reads, which never moves
// down by itself), whether the members are close enough in version for ha
// orchestration, and whether the next node may be upgraded now. It does no
// IO, reads no clock and logs nothing: the node core calls it with what
// the heartbeats said, and the daemon persists the level (docs/operations.md,
// "Upgrading").
package upgrade
