package clock

import (
	"testing"
	"time"
)

// sleepDone runs s.Sleep(d) and returns a channel closed when it returns.
func sleepDone(s Sleeper, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		s.Sleep(d)
		close(done)
	}()
	return done
}

func returned(done <-chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// The wall clock's sleeper waits in a kernel timer (timerfd), not a
// runtime timer: its sleeps end after their time, at a Wake (before or
// during the sleep), or at Close.
func TestKernelSleeper(t *testing.T) {
	s := NewSleeper(Real{})
	defer s.Close()
	if _, ok := s.(*kernelSleeper); !ok {
		t.Fatalf("NewSleeper(Real) = %T, want the timerfd sleeper", s)
	}
	begin := time.Now()
	s.Sleep(30 * time.Millisecond)
	if took := time.Since(begin); took < 30*time.Millisecond {
		t.Fatalf("Sleep(30ms) returned after %v", took)
	}

	done := sleepDone(s, time.Hour)
	if returned(done, 50*time.Millisecond) {
		t.Fatal("Sleep(1h) returned at once")
	}
	s.Wake()
	if !returned(done, 10*time.Second) {
		t.Fatal("a Wake did not end the sleep")
	}
	// the Wake was answered: the next sleep lasts
	done = sleepDone(s, 100*time.Millisecond)
	if returned(done, 50*time.Millisecond) {
		t.Fatal("the sleep after a woken one ended at once")
	}
	if !returned(done, 10*time.Second) {
		t.Fatal("Sleep(100ms) did not end")
	}

	s.Wake() // before the sleep: it ends at once
	if !returned(sleepDone(s, time.Hour), 10*time.Second) {
		t.Fatal("a Wake before the sleep did not end it")
	}

	done = sleepDone(s, time.Hour)
	if returned(done, 20*time.Millisecond) {
		t.Fatal("Sleep(1h) returned at once")
	}
	s.Close()
	if !returned(done, 10*time.Second) {
		t.Fatal("Close did not end the sleep")
	}
	s.Wake() // after Close: nothing (and no panic)
}

// Other clocks' sleepers wait on the clock: a Fake's sleep ends when the
// clock is advanced past it, or at a Wake.
func TestFakeSleeper(t *testing.T) {
	f := NewFake(time.Unix(1000, 0))
	s := NewSleeper(f)
	defer s.Close()
	done := sleepDone(s, 5*time.Second)
	waitWaiters(t, f)
	f.Advance(4 * time.Second)
	if returned(done, 20*time.Millisecond) {
		t.Fatal("the sleep of 5s ended after 4s")
	}
	f.Advance(time.Second)
	if !returned(done, 10*time.Second) {
		t.Fatal("the sleep of 5s did not end after 5s")
	}
	s.Wake()
	if !returned(sleepDone(s, time.Hour), 10*time.Second) {
		t.Fatal("a Wake before the sleep did not end it")
	}
	done = sleepDone(s, time.Hour)
	s.Close()
	if !returned(done, 10*time.Second) {
		t.Fatal("Close did not end the sleep")
	}
}

// waitWaiters waits until a goroutine waits on f's After.
func waitWaiters(t *testing.T, f *Fake) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if f.Waiting() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nobody waits on the fake clock")
		}
		time.Sleep(time.Millisecond)
	}
}
