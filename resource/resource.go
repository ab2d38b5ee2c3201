package resource

import (
	"context"
	"fmt"
	"time"

	"haven/config"
	"haven/dataset"
)

// Env is what a driver needs to know of where it runs.
type Env struct {
	Service string
	Node    string
	VarDir  string // the service's private dir ({var}); commands run there
	// Log receives one line of output or of driver messages at a time,
	// already prefixed by nothing: the caller adds time and rid.
	Log func(rid, line string)
	// OCFRoot is the root of the OCF agents (node.toml ocf_root; ""
	// for /usr/lib/ocf), MonitorInterval the node's monitor_interval,
	// given to the agents' recurring monitors (0 for 10s).
	OCFRoot         string
	MonitorInterval time.Duration
	// RscTmp is the agents' HA_RSCTMP ("" for /run/resource-agents; a
	// daemon run with --root uses ROOT/run/resource-agents).
	RscTmp string
	// Cgroup is the instance's cgroup, a directory of the cgroup v2
	// hierarchy: the commands of each app and ocf resource run in a leaf
	// of it named after the resource (cgroup.go). "" for none: process
	// groups only.
	Cgroup string
	// Cluster is the cluster's name, a label of every container Haven
	// creates; EngineEnv are the variables added to the daemon's
	// environment for the container engine (node.toml container_env).
	Cluster   string
	EngineEnv []string
}

// Driver starts, stops and checks one resource.
type Driver interface {
	RID() string
	// Label is the short description shown in status trees ("192.168.1.5@eth0").
	Label() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	// Status returns the current status and, when it has one, a short reason.
	Status(ctx context.Context) (dataset.Status, string)
}

// New returns the driver for one resource config whose string values have
// already been expanded for this node.
//
// The app driver runs its commands without a shell (see Env for where and
// with what environment); the ip driver uses iproute2, the fs driver
// util-linux mount and umount. A nil env.Log
// discards the lines.
func New(rc config.ResourceConfig, env Env) (Driver, error) {
	if env.Log == nil {
		env.Log = func(string, string) {}
	}
	switch rc.Type {
	case "app":
		return newApp(rc, env)
	case "ip":
		return newIP(rc, env)
	case "fs":
		return newFS(rc, env)
	case "ocf":
		return newOCF(rc, env)
	case "container":
		return newContainer(rc, env)
	}
	return nil, fmt.Errorf("%s: unknown resource type %q", rc.RID, rc.Type)
}

// Announcer is implemented by the drivers whose resource must tell the
// network where it is: the ip driver (gratuitous ARPs for IPv4,
// unsolicited neighbour advertisements for IPv6).
type Announcer interface {
	// Announce tells the network again that this host holds the resource;
	// it does nothing (and returns nil) when the host does not hold it.
	Announce(ctx context.Context) error
}

// Informer is implemented by drivers that have something to tell beyond
// their status (the app driver runs its info command).
type Informer interface {
	Info(ctx context.Context) ([]string, error)
}
