// Package testbed is the one harness of the programs that run real Haven
// daemons: the end-to-end tests (e2e/) and the benchmark programs (bench/).
// It draws free ports, writes node roots (node.toml, cluster.toml with a
// fresh secret, 0600), builds the binaries, starts, stops and crashes
// daemons, kills what they left behind, polls with deadlines, and holds the
// service configs both use. It reports errors instead of failing a test, so
// that a program can use it too; e2e/ wraps it with t.Fatal.
package testbed
