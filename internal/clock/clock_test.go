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
