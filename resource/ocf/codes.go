package ocf

import "fmt"

// The OCF exit codes.
const (
	Success          = 0 // OCF_SUCCESS: done; monitor: running
	ErrGeneric       = 1 // OCF_ERR_GENERIC: a soft error
	ErrArgs          = 2 // OCF_ERR_ARGS
	ErrUnimplemented = 3 // OCF_ERR_UNIMPLEMENTED
	ErrPerm          = 4 // OCF_ERR_PERM
	ErrInstalled     = 5 // OCF_ERR_INSTALLED
	ErrConfigured    = 6 // OCF_ERR_CONFIGURED
	NotRunning       = 7 // OCF_NOT_RUNNING: monitor: cleanly stopped
	RunningPromoted  = 8 // OCF_RUNNING_PROMOTED
	FailedPromoted   = 9 // OCF_FAILED_PROMOTED
)

// Severity is how Haven takes a failed action, as Pacemaker does.
type Severity string

// The severities of a failure.
const (
	// Soft: the resource failed here; the restart ladder, then the
	// monitor_action (Pacemaker's recovery on the same node).
	Soft Severity = "soft"
	// Hard: this node cannot run the resource (arguments, not
	// implemented, permissions, not installed): it is excluded from the
	// service's candidates and the service goes elsewhere (Pacemaker
	// bans the node).
	Hard Severity = "hard"
	// Fatal: the resource is not configured right, on any node: the
	// service is stopped everywhere and frozen until the config is fixed
	// (Pacemaker stops it and starts it nowhere).
	Fatal Severity = "fatal"
)

// Code is what one exit code means.
type Code struct {
	Name     string   // OCF_ERR_INSTALLED
	Meaning  string   // "not installed"
	Severity Severity // of a failure with this code
}

// codes are the OCF exit codes with their meaning and severity.
var codes = map[int]Code{
	Success:          {"OCF_SUCCESS", "success", ""},
	ErrGeneric:       {"OCF_ERR_GENERIC", "generic error", Soft},
	ErrArgs:          {"OCF_ERR_ARGS", "invalid arguments", Hard},
	ErrUnimplemented: {"OCF_ERR_UNIMPLEMENTED", "action not implemented", Hard},
	ErrPerm:          {"OCF_ERR_PERM", "insufficient permissions", Hard},
	ErrInstalled:     {"OCF_ERR_INSTALLED", "not installed", Hard},
	ErrConfigured:    {"OCF_ERR_CONFIGURED", "not configured", Fatal},
	NotRunning:       {"OCF_NOT_RUNNING", "not running", Soft},
	RunningPromoted:  {"OCF_RUNNING_PROMOTED", "running promoted (a failover service has no promoted role)", Soft},
	FailedPromoted:   {"OCF_FAILED_PROMOTED", "failed promoted", Soft},
}

// CodeOf returns what exit code c means; an unknown code is a soft error.
func CodeOf(c int) Code {
	if k, ok := codes[c]; ok {
		return k
	}
	return Code{Name: fmt.Sprintf("exit code %d", c), Meaning: "unknown exit code", Severity: Soft}
}

// Describe renders c: "exit 5 (OCF_ERR_INSTALLED: not installed)".
func Describe(c int) string {
	k := CodeOf(c)
	if _, ok := codes[c]; !ok {
		return k.Name + " (not an OCF code)"
	}
	return fmt.Sprintf("exit %d (%s: %s)", c, k.Name, k.Meaning)
}

// MonitorResult is what a monitor's exit code says of the resource.
type MonitorResult int

// The results of a monitor.
const (
	Running MonitorResult = iota // 0
	Stopped                      // 7: cleanly not running
	Failed                       // 1, 8, 9, others: failed (the ladder)
	Error                        // 2..6: the agent cannot tell here
)

// Monitor reads a monitor's exit code: 0 running, 7 not running, 2 to 6
// an error of the agent (the Severity tells which), anything else (1, the
// promoted codes, an unknown code) a failed resource.
func Monitor(c int) MonitorResult {
	switch c {
	case Success:
		return Running
	case NotRunning:
		return Stopped
	case ErrArgs, ErrUnimplemented, ErrPerm, ErrInstalled, ErrConfigured:
		return Error
	}
	return Failed
}
