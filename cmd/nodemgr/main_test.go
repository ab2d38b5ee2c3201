package main

import (
	"runtime"
	"testing"
)

// nodemgr runs Go code on one processor, unless GOMAXPROCS is in its
// environment: then the runtime's choice (from that variable) stays.
func TestOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	oneProcessor(func(string) string { return "3" })
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("with GOMAXPROCS=3 in the environment: %d processors, want 3", n)
	}
	oneProcessor(func(string) string { return "" })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("without GOMAXPROCS in the environment: %d processors, want 1", n)
	}
}
