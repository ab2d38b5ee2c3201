// Package svcmgr is the `svcmgr` command: service actions, configs and
// status through the local daemon's API (docs/contract.md section 4).
package svcmgr
