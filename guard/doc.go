// Package guard is the node guard: a small process of its own (the
// program haven-guard, cmd/haven-guard, installed beside nodemgr; started
// by the daemon, surviving it) that ends the node's failover services
// when the daemon's lease runs out: the daemon died
// (kill -9, a panic, the OOM killer), hangs, or is paused (SIGSTOP, a
// frozen VM). The survivors' takeover gate counts on it: a lost node's
// services are ended by its guard within the lease and the guard's kill
// bound (docs/behaviour.md 3.1).
//
// The daemon renews the lease from its event loop over a unix socket
// (R/run/guard.sock, mode 0600, root only): a deadline on CLOCK_BOOTTIME
// (a suspended host, or a frozen VM, resumes with the deadline passed:
// the guard acts first) and the kill set, what to end of each running
// failover instance: its cgroup, its process groups (without cgroups),
// its ip resources' addresses, its fs resources' mount points. When the
// deadline passes unrenewed the guard, by itself: kills every cgroup of
// the kill set and waits for them to empty (at most KillWait), SIGKILLs
// the process groups, removes the addresses (rtnetlink RTM_DELADDR),
// detaches the mounts (MNT_DETACH), then records what it did in
// R/var/guard.json (the daemon reads it when it comes back) and logs it.
//
// Small on purpose, to be audited and never to be the thing that hangs:
// no network, no config (the daemon says everything), its memory locked,
// oom_score_adj -1000, one processor. The lease itself is a pure state
// machine on times the shell reads (Lease, tested on a fake clock); the
// shell (Run) is a listener, a timerfd and the actions; Process is the
// process around it (haven-guard's main).
//
// The protocol: one JSON object a line each way (Request, Reply).
package guard
