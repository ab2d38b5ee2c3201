package node

import (
	"testing"

	"haven/dataset"
	"haven/node/instsm"
)

// The shell's own inputs through Step do what their methods do (the
// driver hands them over as values, so that a run can be traced and
// replayed).
func TestStepShellInputs(t *testing.T) {
	c := newCore("n1")
	c.Step(InstanceInstalled{Service: "db", Spec: instsm.Spec{Local: true, Runnable: true}, Now: t0})
	if _, ok := c.Instance("db"); !ok {
		t.Fatal("InstanceInstalled installed no instance")
	}
	c.Step(FrozenSet{Service: "db", Frozen: true, Reason: "test"})
	if !c.Frozen("db") {
		t.Fatal("FrozenSet did not freeze the instance")
	}
	c.Step(NodeFrozenSet{Frozen: true, Reason: "test"})
	if !c.NodeFrozen() {
		t.Fatal("NodeFrozenSet did not freeze the node")
	}
	c.Step(NodeMonitorSet{Monitor: dataset.NodeDraining, Reason: "test"})
	if c.NodeMonitor() != dataset.NodeDraining {
		t.Fatalf("NodeMonitorSet: monitor %s", c.NodeMonitor())
	}
	c.Step(InstanceRemoved{Service: "db"})
	if _, ok := c.Instance("db"); ok {
		t.Fatal("InstanceRemoved left the instance")
	}
}
