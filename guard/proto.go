package guard

import "time"

// Version is the protocol's version, in every reply.
const Version = 1

// KillWait bounds how long the guard waits for the cgroups it killed to
// empty; ActBound is the whole of its action after the deadline: the
// wait, then the addresses and mounts (netlink and umount2 calls that do
// not wait on anything), with room for scheduling. The survivors count
// ActBound after a lost node's lease (the "K" of docs/behaviour.md 3.1).
const (
	KillWait = 2 * time.Second
	ActBound = KillWait + 500*time.Millisecond
)

// The operations of a Request.
const (
	OpRenew  = "renew"  // arm, or move the deadline (and the kill set)
	OpDisarm = "disarm" // nothing is ended any more (a clean shutdown)
	OpStatus = "status" // the state only
	OpAck    = "ack"    // the daemon took the fired record in
	OpExit   = "exit"   // disarmed: the guard exits
)

// Addr is an address an ip resource holds: Prefix on device Dev
// ("10.0.0.5/24", "eth0").
type Addr struct {
	Dev    string `json:"dev"`
	Prefix string `json:"prefix"`
}

// Target is what the guard ends of one running failover instance.
type Target struct {
	Service string `json:"service"`
	// Cgroup is the instance's cgroup ("" without cgroups).
	Cgroup string `json:"cgroup,omitempty"`
	// Groups are the process groups of its resources' last starts, used
	// when it has no cgroup.
	Groups []int  `json:"groups,omitempty"`
	Addrs  []Addr `json:"addrs,omitempty"`
	// Mounts are its fs resources' mount points.
	Mounts []string `json:"mounts,omitempty"`
}

// Request is one line from the daemon.
type Request struct {
	Op string `json:"op"`
	// Deadline is the lease's end on CLOCK_BOOTTIME, in nanoseconds
	// (renew).
	Deadline int64 `json:"deadline_ns,omitempty"`
	// Gen numbers the kill set; Kill is sent when it changed, or when
	// the guard's Gen differs (a guard started again): SetKill says Kill
	// is meant, even empty.
	Gen     uint64   `json:"gen,omitempty"`
	SetKill bool     `json:"set_kill,omitempty"`
	Kill    []Target `json:"kill,omitempty"`
	// Fired is the id of the record acknowledged (ack).
	Fired string `json:"fired,omitempty"`
}

// Reply is the guard's answer: its state after the request.
type Reply struct {
	Version int  `json:"version"`
	Pid     int  `json:"pid"`
	Armed   bool `json:"armed"`
	// Now and Deadline are CLOCK_BOOTTIME, in nanoseconds; Left is what
	// remains of the lease (0 when disarmed or passed).
	Now      int64  `json:"now_ns"`
	Deadline int64  `json:"deadline_ns,omitempty"`
	Left     int64  `json:"left_ns,omitempty"`
	Gen      uint64 `json:"gen"`
	Targets  int    `json:"targets"`
	// Fired is the last time the guard acted (nil: never, as far as its
	// record goes).
	Fired *Record `json:"fired,omitempty"`
	Error string  `json:"error,omitempty"`
}

// Record is what the guard did when a lease ran out.
type Record struct {
	// ID names this firing (the CLOCK_BOOTTIME of the action and the
	// guard's pid): the daemon acknowledges it by it.
	ID string `json:"id"`
	// At is the wall clock of the action; Deadline the lease's end and
	// Late how long after it the guard acted (a frozen host: the timer
	// ran late), Took how long the action took.
	At       time.Time     `json:"at"`
	Deadline int64         `json:"deadline_ns"`
	Late     time.Duration `json:"late_ns"`
	Took     time.Duration `json:"took_ns"`
	Ended    []Ended       `json:"ended"`
	// Acked: a daemon took it in (the event guard_fired was given).
	Acked bool `json:"acked"`
}

// Services are the services the record ended.
func (r *Record) Services() []string {
	out := make([]string, len(r.Ended))
	for i, e := range r.Ended {
		out[i] = e.Service
	}
	return out
}

// Ended is what the guard did to one target.
type Ended struct {
	Service string `json:"service"`
	Cgroup  string `json:"cgroup,omitempty"`
	// Killed is the number of processes in the cgroup when it was
	// killed; Empty: it emptied within KillWait.
	Killed int      `json:"killed"`
	Empty  bool     `json:"empty"`
	Groups []int    `json:"groups,omitempty"`
	Addrs  []string `json:"addrs,omitempty"`  // removed
	Mounts []string `json:"mounts,omitempty"` // detached
	Errors []string `json:"errors,omitempty"`
}
