package clock

import (
	"testing"
	"time"
)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A fake timer fires when Advance passes it, not before; Stop and Reset
// work as time.Timer's.
func TestFakeTimer(t *testing.T) {
	f := NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tm := f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	if fired(tm.C()) {
		t.Fatal("fired early")
	}
	f.Advance(time.Millisecond)
	if !fired(tm.C()) {
		t.Fatal("did not fire at its time")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reports it armed")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a fired timer reports it armed")
	}
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reports it not armed")
	}
	f.Advance(2 * time.Second)
	if fired(tm.C()) {
		t.Fatal("a stopped timer fired")
	}
	if f.NewTimer(0); !fired(f.NewTimer(0).C()) {
		t.Fatal("a timer of 0 did not fire at once")
	}
}

// A fake ticker ticks every period; the ticks not received are dropped.
func TestFakeTicker(t *testing.T) {
	f := NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	tk := f.NewTicker(time.Second)
	f.Advance(time.Second)
	if !fired(tk.C()) {
		t.Fatal("no tick after a period")
	}
	f.Advance(5 * time.Second)
	if !fired(tk.C()) || fired(tk.C()) {
		t.Fatal("after 5 periods unread: want one tick, the others dropped")
	}
	tk.Stop()
	f.Advance(time.Second)
	if fired(tk.C()) {
		t.Fatal("a stopped ticker ticked")
	}
	tk.Reset(2 * time.Second)
	f.Advance(time.Second)
	if fired(tk.C()) {
		t.Fatal("ticked before its new period")
	}
	f.Advance(time.Second)
	if !fired(tk.C()) {
		t.Fatal("no tick after its new period")
	}
}
