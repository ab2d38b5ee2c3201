package resource

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"haven/config"
	"haven/dataset"
)

// Set is the resources of one instance, in start order (the order of the
// service config: ip, then fs, then ocf, then app, each by name). Its methods may be called
// from several goroutines, but the caller should not run two actions on
// the same resource at once.
type Set struct {
	env   Env
	items []item

	mu   sync.Mutex
	last map[string]string // last line logged per rid
}

type item struct {
	rc  config.ResourceConfig
	drv Driver
}

// NewSet builds the drivers of rcs, kept in the given order. env.Log (which
// may be nil) receives every line, and the Set remembers the last one of
// each resource for Status.
func NewSet(rcs []config.ResourceConfig, env Env) (*Set, error) {
	s := &Set{last: map[string]string{}}
	log := env.Log
	env.Log = func(rid, line string) {
		s.mu.Lock()
		s.last[rid] = line
		s.mu.Unlock()
		if log != nil {
			log(rid, line)
		}
	}
	s.env = env
	seen := map[string]bool{}
	for _, rc := range rcs {
		if seen[rc.RID] {
			return nil, fmt.Errorf("%s: duplicate resource id", rc.RID)
		}
		seen[rc.RID] = true
		drv, err := New(rc, env)
		if err != nil {
			return nil, err
		}
		s.items = append(s.items, item{rc: rc, drv: drv})
	}
	return s, nil
}

// RIDs returns the resource ids in start order.
func (s *Set) RIDs() []string {
	out := make([]string, len(s.items))
	for i, it := range s.items {
		out[i] = it.rc.RID
	}
	return out
}

// Driver returns the driver of one resource.
func (s *Set) Driver(rid string) (Driver, bool) {
	it, ok := s.find(rid)
	return it.drv, ok
}

func (s *Set) find(rid string) (item, bool) {
	for _, it := range s.items {
		if it.rc.RID == rid {
			return it, true
		}
	}
	return item{}, false
}

// Start starts the resources in order, skipping the disabled ones and
// those whose check already says up (a second start would run a second
// copy; a resource without check, n/a, is started); an address skipped
// so is announced again (Announcer). A failed optional
// resource is logged and skipped. A failed required resource ends
// the start: the resources already started are stopped in reverse order
// (rollback) and the error is returned, joined with any rollback error.
func (s *Set) Start(ctx context.Context) error {
	var started []item
	for _, it := range s.items {
		if it.rc.Disable {
			continue
		}
		if st, _ := it.drv.Status(ctx); st == dataset.StatusUp {
			s.env.Log(it.rc.RID, "already up: start skipped")
			if a, ok := it.drv.(Announcer); ok {
				// the instance starts here: the network must know
				// where the address is (it may have reached another
				// node's copy meanwhile)
				if err := a.Announce(ctx); err != nil {
					s.env.Log(it.rc.RID, "announce: "+err.Error())
				}
			}
			continue
		}
		err := it.drv.Start(ctx)
		if err == nil {
			started = append(started, it)
			continue
		}
		if it.rc.Optional {
			s.env.Log(it.rc.RID, "optional resource failed to start: "+err.Error())
			continue
		}
		var rollback []error
		for i := len(started) - 1; i >= 0; i-- {
			r := started[i]
			s.env.Log(r.rc.RID, "rollback: stop")
			if serr := r.drv.Stop(ctx); serr != nil {
				rollback = append(rollback, fmt.Errorf("rollback: %w", serr))
			}
		}
		return errors.Join(append([]error{err}, rollback...)...)
	}
	return nil
}

// Announce announces again the resources that tell the network where
// they are (Announcer: the addresses) and are up here, skipping the
// disabled ones; the failures are joined.
func (s *Set) Announce(ctx context.Context) error {
	var errs []error
	for _, it := range s.items {
		if a, ok := it.drv.(Announcer); ok && !it.rc.Disable {
			if err := a.Announce(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Stop stops the resources in reverse order, skipping the disabled ones,
// and goes on past failures. It returns the failures of the required
// resources joined; those of optional resources are only logged. When
// every stop ended well, the processes still in the instance's cgroup
// (a daemon the stop command missed, a child that double-forked) are
// killed: a stop that ends leaves nothing of the instance running.
func (s *Set) Stop(ctx context.Context) error {
	var errs []error
	for i := len(s.items) - 1; i >= 0; i-- {
		it := s.items[i]
		if it.rc.Disable {
			continue
		}
		if err := it.drv.Stop(ctx); err != nil {
			if it.rc.Optional {
				s.env.Log(it.rc.RID, "optional resource failed to stop: "+err.Error())
				continue
			}
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := killLeft(s.env.Cgroup, func(l string) { s.env.Log("", l) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgrouped is a driver whose commands run in a cgroup of their own.
type cgrouped interface{ Cgroup() string }

// startGrouped is a driver that knows the process group of its last start.
type startGrouped interface{ StartGroup() int }

// StartOne starts one resource (a local restart). A disabled or unknown
// resource is an error.
func (s *Set) StartOne(ctx context.Context, rid string) error {
	it, err := s.one(rid)
	if err != nil {
		return err
	}
	return it.drv.Start(ctx)
}

// StopOne stops one resource. A disabled or unknown resource is an error.
// When its stop ended well, what is left in its cgroup is killed.
func (s *Set) StopOne(ctx context.Context, rid string) error {
	it, err := s.one(rid)
	if err != nil {
		return err
	}
	if err := it.drv.Stop(ctx); err != nil {
		return err
	}
	if c, ok := it.drv.(cgrouped); ok {
		return killLeft(c.Cgroup(), func(l string) { s.env.Log(rid, l) })
	}
	return nil
}

func (s *Set) one(rid string) (item, error) {
	it, ok := s.find(rid)
	if !ok {
		return item{}, fmt.Errorf("%s: no such resource", rid)
	}
	if it.rc.Disable {
		return item{}, fmt.Errorf("%s: resource is disabled", rid)
	}
	return it, nil
}

// Status checks every resource, one after the other, and returns their
// statuses by rid with the config flags. A disabled resource is n/a and not
// checked. Log is the reason the driver gave, or else (for a resource not
// found down or warn) the last line logged for the resource.
// RestartRemaining is left to the caller.
func (s *Set) Status(ctx context.Context) map[string]dataset.Resource {
	return s.status(ctx, func(config.ResourceConfig) bool { return true })
}

// StatusMonitored is Status limited to the resources with monitor = true
// (disabled ones excepted), for the frequent checks.
func (s *Set) StatusMonitored(ctx context.Context) map[string]dataset.Resource {
	return s.status(ctx, func(rc config.ResourceConfig) bool { return rc.Monitor && !rc.Disable })
}

func (s *Set) status(ctx context.Context, keep func(config.ResourceConfig) bool) map[string]dataset.Resource {
	out := make(map[string]dataset.Resource, len(s.items))
	for _, it := range s.items {
		if !keep(it.rc) {
			continue
		}
		r := dataset.Resource{
			Status:   dataset.StatusNA,
			Monitor:  it.rc.Monitor,
			Optional: it.rc.Optional,
			Disabled: it.rc.Disable,
		}
		var reason string
		if !it.rc.Disable {
			if f, ok := it.drv.(Faulter); ok {
				r.Status, reason, r.Fault = f.FaultStatus(ctx)
			} else {
				r.Status, reason = it.drv.Status(ctx)
			}
		}
		// the last line logged says what the resource did last: shown
		// beside a resource that runs, never as the reason of a failure
		// (a down or warn check that said nothing would quote its start's
		// line: "check says down: started")
		if reason == "" && r.Status != dataset.StatusDown && r.Status != dataset.StatusWarn {
			s.mu.Lock()
			reason = s.last[it.rc.RID]
			s.mu.Unlock()
		}
		// the label after the check: an OCF agent's meta-data, read by
		// its first monitor, says which parameters hold secrets; what
		// is published is masked (secrets.go)
		r.Label = MaskSecrets(it.drv.Label())
		r.Log = MaskSecrets(reason)
		out[it.rc.RID] = r
	}
	return out
}
