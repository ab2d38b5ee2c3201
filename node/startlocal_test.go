package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
)

// svcmgr start --local where the service runs on another
// node is refused as restart is (an error, no action: exit 1), naming
// that node; --force starts the second copy on purpose.
func TestStartLocalRefusedWhereTheServiceRunsElsewhere(t *testing.T) {
	fc := clock.NewFake(t0)
	p := newLadderPair(t, fc)
	n2 := p.nodes["n2"]
	for i := 0; i < 3; i++ {
		p.step(time.Second)
	}
	if r := p.lastRun("n1"); r.Kind != "start" {
		t.Fatalf("n1: got %+v, want the start of web", r)
	}
	p.finish("n1", "start", nil, dataset.StatusUp)
	p.exchange()

	before := len(p.runs["n2"])
	tk := n2.adminLocal(LocalRequest{Service: "web", Action: "start", Now: fc.Now()})
	a := answers(n2)[tk]
	if a.Err == nil || a.Bad || !strings.Contains(a.Err.Error(), "web runs on n1") || !strings.Contains(a.Err.Error(), "--force") {
		t.Fatalf("start --local on n2: got %+v, want a refusal (not a usage error) naming n1 and --force", a)
	}
	if len(p.runs["n2"]) != before || n2.Busy("web") != "" {
		t.Fatalf("start --local refused, yet n2 ordered %+v", p.runs["n2"][before:])
	}
	tk = n2.adminLocal(LocalRequest{Service: "web", Action: "start", Now: fc.Now(), Force: true})
	rd := p.drain("n2")
	if len(rd.Run) != 1 || rd.Run[0].Kind != "start" || rd.Run[0].Reason != "admin start --local --force" {
		t.Fatalf("start --local --force on n2: got %+v, want the start", rd.Run)
	}
	p.finish("n2", "start", nil, dataset.StatusUp)
	if a := answers(n2)[tk]; a.Err != nil {
		t.Fatalf("forced start answered %+v", a)
	}
}
