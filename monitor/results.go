package monitor

import (
	"strings"
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

// Failure is the monitor after a failed start or stop (AfterStart or
// AfterStop with ok false) with its cause: the shell passes the action's
// error, of which the first line is kept.
func Failure(m dataset.InstanceMonitor, cause string) dataset.InstanceMonitor {
	if m.State.Failed() {
		cause, _, _ = strings.Cut(cause, "\n")
		m.Error = cause
	}
	return m
}

// setState moves m to st; leaving a failed state forgets its cause.
func setState(m dataset.InstanceMonitor, st dataset.MonitorState, now time.Time) dataset.InstanceMonitor {
	if !st.Failed() {
		m.Error = ""
	}
	if m.State != st {
		m.State = st
		m.StateSince = now
	}
	return m
}
