package guard

import (
	"testing"
	"time"
)

var web = Target{Service: "web", Cgroup: "/sys/fs/cgroup/haven/n1-x/services/web", Addrs: []Addr{{Dev: "eth0", Prefix: "10.0.0.5/24"}}}

func renew(at time.Duration, gen uint64, kill ...Target) Request {
	return Request{Op: OpRenew, Deadline: int64(at), Gen: gen, SetKill: kill != nil, Kill: kill}
}

func TestLeaseRunsOutUnrenewed(t *testing.T) {
	var l Lease
	now := 100 * time.Second
	rep, fire, _ := l.Handle(now, renew(now+5*time.Second, 1, web))
	if fire || !rep.Armed || rep.Left != int64(5*time.Second) || rep.Targets != 1 || rep.Gen != 1 {
		t.Fatalf("renew: %+v fire %v", rep, fire)
	}
	if d, armed := l.Timer(); !armed || d != now+5*time.Second {
		t.Fatalf("timer %s %v", d, armed)
	}
	// renewed in time: the deadline moves, the kill set stays (no SetKill)
	now += 4 * time.Second
	rep, _, _ = l.Handle(now, renew(now+5*time.Second, 1))
	if rep.Targets != 1 || rep.Left != int64(5*time.Second) {
		t.Fatalf("second renew: %+v", rep)
	}
	now += 5*time.Second - 1
	if l.Due(now) {
		t.Fatal("due before the deadline")
	}
	now++
	if !l.Due(now) {
		t.Fatal("not due at the deadline")
	}
	deadline, kill := l.Fire()
	if deadline != now || len(kill) != 1 || kill[0].Service != "web" {
		t.Fatalf("fire: %s %+v", deadline, kill)
	}
	if l.Due(now+time.Hour) || l.State(now).Armed {
		t.Fatal("still armed after firing")
	}
	l.Done(Record{ID: "r1", Ended: []Ended{{Service: "web"}}})
	rep, _, _ = l.Handle(now, Request{Op: OpStatus})
	if rep.Fired == nil || rep.Fired.ID != "r1" || rep.Fired.Acked {
		t.Fatalf("status after firing: %+v", rep)
	}
	rep, _, _ = l.Handle(now, Request{Op: OpAck, Fired: "r1"})
	if !rep.Fired.Acked || rep.Error != "" {
		t.Fatalf("ack: %+v", rep)
	}
	if rep, _, _ = l.Handle(now, Request{Op: OpAck, Fired: "r0"}); rep.Error == "" {
		t.Fatal("an ack of another record passed")
	}
}

// A renewal that comes after the deadline, before the shell acted (the
// request and the timer at once, a frozen host resumed), never revives
// the lease: the shell must act first.
func TestLeaseNoRenewalRevivesARunOutLease(t *testing.T) {
	var l Lease
	l.Handle(0, renew(5*time.Second, 1, web))
	for _, op := range []string{OpRenew, OpStatus, OpDisarm, OpAck, OpExit} {
		r := renew(20*time.Second, 1)
		r.Op = op
		if _, fire, exit := l.Handle(6*time.Second, r); !fire || exit {
			t.Fatalf("%s after the deadline: fire %v exit %v", op, fire, exit)
		}
	}
	l.Fire()
	if rep, fire, _ := l.Handle(6*time.Second, renew(11*time.Second, 1)); fire || !rep.Armed {
		t.Fatalf("renew after the action: %+v %v", rep, fire)
	}
}

func TestLeaseDisarmExitAndBadRequests(t *testing.T) {
	var l Lease
	l.Handle(0, renew(5*time.Second, 3, web))
	if rep, _, exit := l.Handle(time.Second, Request{Op: OpExit}); exit || rep.Error == "" {
		t.Fatalf("exit while armed: %+v %v", rep, exit)
	}
	if rep, _, _ := l.Handle(time.Second, Request{Op: OpDisarm}); rep.Armed || rep.Left != 0 {
		t.Fatalf("disarm: %+v", rep)
	}
	if l.Due(time.Hour) {
		t.Fatal("a disarmed lease is due")
	}
	if _, _, exit := l.Handle(time.Second, Request{Op: OpExit}); !exit {
		t.Fatal("exit while disarmed refused")
	}
	for _, r := range []Request{{Op: "kill"}, {Op: OpRenew}} {
		if rep, _, _ := l.Handle(time.Second, r); rep.Error == "" {
			t.Errorf("%+v accepted", r)
		}
	}
	// a new kill set replaces the old one, even empty
	l.Handle(time.Second, renew(5*time.Second, 4))
	if rep := l.State(time.Second); rep.Gen != 3 || rep.Targets != 1 {
		t.Fatalf("no SetKill: %+v", rep)
	}
	r := renew(5*time.Second, 4)
	r.SetKill = true
	if rep, _, _ := l.Handle(time.Second, r); rep.Gen != 4 || rep.Targets != 0 {
		t.Fatalf("empty kill set: %+v", rep)
	}
}
