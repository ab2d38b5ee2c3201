package clock

import (
	"testing"
	"time"
)

func TestFakeFiresTimersWhenDue(t *testing.T) {
	f := NewFake(time.Unix(1000, 0))
	ch := f.After(16 * time.Second)
	f.Advance(15 * time.Second)
	select {
	case <-ch:
		t.Fatal("timer fired 1s early")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-ch:
		if want := time.Unix(1016, 0); !got.Equal(want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	default:
		t.Fatal("timer did not fire when due")
	}
}

// TestSuspendedClocks: the real clock's suspended time is the difference of
// CLOCK_BOOTTIME and CLOCK_MONOTONIC (never negative, steady while the
// host runs); the fake's grows by Suspend and leaves Now alone.
func TestSuspendedClocks(t *testing.T) {
	a := Real{}.Suspended()
	b := Real{}.Suspended()
	if a < 0 || b-a > 10*time.Millisecond || a-b > 10*time.Millisecond {
		t.Fatalf("suspended %s then %s on a running host", a, b)
	}
	f := NewFake(time.Unix(1000, 0))
	f.Suspend(30 * time.Second)
	if f.Suspended() != 30*time.Second || !f.Now().Equal(time.Unix(1000, 0)) {
		t.Fatalf("fake: suspended %s, now %v", f.Suspended(), f.Now())
	}
}
