package clock

import (
	"testing"
	"time"
)

func firedWithin(t ClosableTimer, within time.Duration) bool {
	select {
	case <-t.C():
		return true
	case <-time.After(within):
		return false
	}
}

// The wall clock's kernel timer fires after its time, again after a
// Reset, never once stopped, and Reset moves it either way.
func TestKernelTimer(t *testing.T) {
	k := NewKernelTimer(Real{}, 30*time.Millisecond)
	defer k.Close()
	if _, ok := k.(*kernelTimer); !ok {
		t.Fatalf("NewKernelTimer(Real) = %T, want the timerfd timer", k)
	}
	begin := time.Now()
	if !firedWithin(k, 5*time.Second) {
		t.Fatal("never fired")
	}
	if took := time.Since(begin); took < 30*time.Millisecond {
		t.Fatalf("fired after %v, armed for 30ms", took)
	}
	k.Reset(time.Hour)
	k.Reset(20 * time.Millisecond) // earlier
	if !firedWithin(k, 5*time.Second) {
		t.Fatal("a Reset to an earlier time never fired")
	}
	k.Reset(20 * time.Millisecond)
	k.Reset(time.Hour) // later: the first arming is forgotten
	if firedWithin(k, 100*time.Millisecond) {
		t.Fatal("fired at a time a Reset replaced")
	}
	k.Reset(10 * time.Millisecond)
	if !k.Stop() {
		t.Fatal("Stop of an armed timer said it was not armed")
	}
	if firedWithin(k, 100*time.Millisecond) {
		t.Fatal("fired once stopped")
	}
}

// Other clocks give their own timer.
func TestKernelTimerOfTheFakeClock(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	k := NewKernelTimer(f, time.Second)
	defer k.Close()
	f.Advance(time.Second)
	if !firedWithin(k, 5*time.Second) {
		t.Fatal("the fake clock's timer did not fire")
	}
}
