package sim

import (
	"slices"
	"testing"

	"haven/node"
)

// The events of a flex service (node/flexevents.go), as nodemgr events
// shows them on each node: a node lost is said (flex_instances, lost) and
// the start that takes its place is a flex_replaced naming it; a scale is
// a flex_scaled on every node; the first starts are flex_placed.
func TestFlexEvents(t *testing.T) {
	res, err := RunScript("flexevents", `cluster n1 n2 n3 hb.timeout=3s hb.interval=1s ready_period=2s
service app nodes=n1,n2,n3 orchestrate=ha topology=flex flex_target=2
run 6s
crash n1
run 10s
n2: svcmgr -s app set --kw flex_target=3
run 6s
`)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("%v %v", err, res.Failed)
	}
	var placed, replaced []string
	var lost, scaled bool
	var last node.FlexInstances
	for _, e := range res.Events {
		switch ev := e.Event.(type) {
		case node.FlexPlaced:
			placed = append(placed, e.Node)
		case node.FlexReplaced:
			replaced = append(replaced, e.Node+" for "+ev.Replaces)
		case node.FlexInstances:
			if e.Node == "n2" {
				lost = lost || slices.Equal(ev.Lost, []string{"n1"})
				last = ev
			}
		case node.FlexScaled:
			scaled = scaled || e.Node == "n3" && ev.From == 2 && ev.To == 3
		}
	}
	if !slices.Equal(placed, []string{"n1", "n2"}) {
		t.Errorf("placed on %v, want n1 n2", placed)
	}
	if !slices.Equal(replaced, []string{"n3 for n1"}) {
		t.Errorf("replaced %v, want n3 for n1", replaced)
	}
	if !lost || !scaled {
		t.Errorf("n2 said n1 lost: %v; n3 said 2 -> 3: %v", lost, scaled)
	}
	if last.Up != 2 || last.Target != 3 {
		t.Errorf("n2's last count: %+v, want 2 of 3 (n1 crashed: only n2 and n3 left)", last)
	}
}
