// Package svcmon is the `svcmon` command: the cluster at a glance.
package svcmon
