package resource

import (
	"context"

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
func New(rc config.ResourceConfig, env Env) (Driver, error) {
	panic("TODO")
}
