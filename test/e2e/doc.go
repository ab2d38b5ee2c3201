// Package e2e runs the real binaries: daemons started with `nodemgr daemon
// start`, each with its own --root, driven with svcmgr/nodemgr/svcmon as a
// sysadmin would. Tests poll for conditions with deadlines. The harness
// (ports, roots, daemons, service configs) is package testbed, shared with
// the benchmark programs; *_test.go here only wraps it with t.Fatal.
package e2e
