package monitor

import (
	"time"

	"haven/dataset"
)

// The shell reports the end of an action by replacing the local instance's
// monitor with the value of one of these helpers (and, for freeze and thaw,
// by setting Instance.Frozen), then refreshing the instance status.

// AfterStart is the monitor after a start action ended: idle with local
// expect "started" on success, "start failed" otherwise.
func AfterStart(m dataset.InstanceMonitor, ok bool, now time.Time) dataset.InstanceMonitor {
	if ok {
		m.LocalExpect = dataset.ExpectStarted
		return setState(m, dataset.Idle, now)
	}
	return setState(m, dataset.StartFailed, now)
}

// AfterStop is the monitor after a stop action ended: idle with local
// expect "none" on success, "stop failed" otherwise.
func AfterStop(m dataset.InstanceMonitor, ok bool, now time.Time) dataset.InstanceMonitor {
	if ok {
		m.LocalExpect = dataset.ExpectNone
		return setState(m, dataset.Idle, now)
	}
	return setState(m, dataset.StopFailed, now)
}

// AfterFreeze is the monitor after a freeze or thaw action: idle. The shell
// sets and persists Instance.Frozen itself.
func AfterFreeze(m dataset.InstanceMonitor, now time.Time) dataset.InstanceMonitor {
	return setState(m, dataset.Idle, now)
}

// Clear is the admin "clear": "start failed" and "stop failed" go back to
// idle; any other state is kept.
func Clear(m dataset.InstanceMonitor, now time.Time) dataset.InstanceMonitor {
	if m.State.Failed() {
		return setState(m, dataset.Idle, now)
	}
	return m
}

// Reset is the monitor of a local instance when the daemon starts: any
// state of an action that can no longer be running (the *ing states) and
// the waiting states go back to idle; failed states are kept.
func Reset(m dataset.InstanceMonitor, now time.Time) dataset.InstanceMonitor {
	if m.State.Failed() {
		return m
	}
	if m.State != dataset.Idle {
		return setState(m, dataset.Idle, now)
	}
	return m
}

func setState(m dataset.InstanceMonitor, st dataset.MonitorState, now time.Time) dataset.InstanceMonitor {
	if m.State != st {
		m.State = st
		m.StateSince = now
	}
	return m
}
