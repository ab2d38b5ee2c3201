package monitor

import "haven/dataset"

// GaveUpHolds reports whether the restart ladder's give-up of an instance
// (dataset.Instance.GaveUp: gaveUp) holds back d, the decision of its node:
// without an admin target the orchestrator does not start a gave-up
// instance by itself (no ready window, no start) until svcmgr clear, a
// start, or its resource up again. The node core drops such a decision;
// Explain says so.
func GaveUpHolds(gaveUp string, d Decision) bool {
	return gaveUp != "" && d.Monitor.GlobalExpect == dataset.ExpectNone &&
		(d.Action == ActionStart || d.Monitor.State == dataset.Ready)
}
