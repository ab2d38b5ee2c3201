// Package e2e runs the real binaries: daemons started with `nodemgr daemon
// start`, each with its own --root, driven with svcmgr/nodemgr/svcmon as a
// sysadmin would. Tests poll for conditions with deadlines.
package e2e
