// Package paths resolves every file location from the optional root
// (docs/contract.md section 2): with a root R everything lives below R, without one
// the system locations are used: the FHS layout the .deb and `make install`
// set up (/etc/haven, /var/lib/haven, /run/haven, /var/log/haven). Run by
// systemd, the daemon logs to the journal instead of Log/node.log; the
// service logs stay under Log/services.
package paths

import (
	"os"
	"path/filepath"
)

// EnvRoot is the environment variable that sets the root like --root.
const EnvRoot = "HAVEN_ROOT"

// Paths are the locations used by one node.
type Paths struct {
	Root       string // "" for the system layout
	Etc        string
	NodeConf   string
	Cluster    string
	NodeKey    string // this node's private key (never leaves the host)
	ServiceDir string
	Var        string
	Run        string
	Socket     string
	Log        string
}

// New returns the layout for root ("" for the system layout).
func New(root string) Paths {
	if root == "" {
		return Paths{
			Etc:        "/etc/haven",
			NodeConf:   "/etc/haven/node.toml",
			Cluster:    "/etc/haven/cluster.toml",
			NodeKey:    "/etc/haven/node.key",
			ServiceDir: "/etc/haven/services",
			Var:        "/var/lib/haven",
			Run:        "/run/haven",
			Socket:     "/run/haven/daemon.sock",
			Log:        "/var/log/haven",
		}
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		root = abs
	}
	return Paths{
		Root:       root,
		Etc:        filepath.Join(root, "etc"),
		NodeConf:   filepath.Join(root, "etc", "node.toml"),
		Cluster:    filepath.Join(root, "etc", "cluster.toml"),
		NodeKey:    filepath.Join(root, "etc", "node.key"),
		ServiceDir: filepath.Join(root, "etc", "services"),
		Var:        filepath.Join(root, "var"),
		Run:        filepath.Join(root, "run"),
		Socket:     filepath.Join(root, "run", "daemon.sock"),
		Log:        filepath.Join(root, "log"),
	}
}

// FromEnv returns the layout for flag (if set) or $HAVEN_ROOT.
func FromEnv(flag string) Paths {
	if flag == "" {
		flag = os.Getenv(EnvRoot)
	}
	return New(flag)
}

// ServiceConf is the config file of service name.
func (p Paths) ServiceConf(name string) string {
	return filepath.Join(p.ServiceDir, name+".toml")
}

// ServiceVar is the private directory of service name ({var}).
func (p Paths) ServiceVar(name string) string {
	return filepath.Join(p.Var, "services", name)
}

// ServiceLog is the log file of service name.
func (p Paths) ServiceLog(name string) string {
	return filepath.Join(p.Log, "services", name+".log")
}

// NodeLog is the daemon's log file.
func (p Paths) NodeLog() string { return filepath.Join(p.Log, "node.log") }

// Lock is the file the daemon locks to own the root.
func (p Paths) Lock() string { return filepath.Join(p.Run, "daemon.lock") }

// PidFile holds the daemon's pid.
func (p Paths) PidFile() string { return filepath.Join(p.Run, "daemon.pid") }

// State is the file of durable node state (frozen flags, targets, counters).
func (p Paths) State() string { return filepath.Join(p.Var, "state.json") }

// ArbitratorConf is the config of the one-vote arbitrator (nodemgr
// arbitrator run), on a host that is no cluster member.
func (p Paths) ArbitratorConf() string { return filepath.Join(p.Etc, "arbitrator.toml") }

// ArbitratorKey is the one-vote arbitrator's private key, beside its
// config (mode 0600, never leaves the host).
func (p Paths) ArbitratorKey() string { return filepath.Join(p.Etc, "arbitrator.key") }

// ArbitratorStatus is where the running arbitrator writes its status
// (nodemgr arbitrator status reads it).
func (p Paths) ArbitratorStatus() string { return filepath.Join(p.Run, "arbitrator.json") }

// ArbitratorPid is the running arbitrator's pid file; it holds its lock.
func (p Paths) ArbitratorPid() string { return filepath.Join(p.Run, "arbitrator.pid") }

// GuardSocket is the node guard's socket (haven-guard), mode 0600;
// GuardLock is locked while the guard runs.
func (p Paths) GuardSocket() string { return filepath.Join(p.Run, "guard.sock") }
func (p Paths) GuardLock() string   { return filepath.Join(p.Run, "guard.lock") }

// GuardRecord is where the guard records its last action: the daemon
// reads it when it comes back.
func (p Paths) GuardRecord() string { return filepath.Join(p.Var, "guard.json") }

// GuardLog is the guard's log file.
func (p Paths) GuardLog() string { return filepath.Join(p.Log, "guard.log") }
