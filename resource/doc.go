// Package resource holds the resource drivers (one per type: app, ip, fs,
// ocf) behind the small Driver interface, and Set, which runs the resources
// of one instance in order (start: ip, fs, ocf, app; stop: reverse). This is shell code:
// it runs commands and changes addresses. The daemon calls it; the pure core
// never does.
//
// app: the start, stop, check and info command lines are split into words
// by splitWords (quotes and backslashes, no expansion) and run without a
// shell, in the service's private directory, with the daemon's environment
// plus HAVEN_SVCNAME, HAVEN_NODENAME, HAVEN_RID and HAVEN_ACTION. Each runs
// in its own process group; on timeout the whole group gets SIGTERM, then
// SIGKILL. An action returns when its command exits, even when a daemon it
// left in the background keeps stdout/stderr open; that output is still
// read (and logged) until the daemon closes it. Start and stop output goes
// to Env.Log line by line; check output only when the check result changes.
//
// ip: iproute2 (`ip addr add|del`); whether the address is on the device
// (the status, and the checks of start and stop) is read through rtnetlink
// in the daemon, no process run (devAddr). Before adding an address, start
// probes the link (ARP for IPv4, ICMP echo for IPv6, see probeAddr) and
// refuses when another host answers for it.
//
// ocf: an OCF resource agent (ocfagent.go; package ocf: the environment,
// the exit codes, the meta-data), run as Pacemaker runs it: start
// (validate-all, start, a monitor that confirms it), stop, monitor (a probe
// until the resource was started or found running). A check's hard or
// fatal fault goes in dataset.Resource.Fault (Faulter), a failed action's
// in its error (OCFError.Fault), for the node core. docs/resources.md.
package resource
