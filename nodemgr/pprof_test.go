package nodemgr

import (
	"strings"
	"testing"
)

// The profiler listener is opt-in and loopback only.
func TestPprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", "10.1.2.3:6060", "localhost", ":6060"} {
		t.Setenv(EnvPprof, addr)
		if err := startPprof(); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s=%q: err %v, want a refusal naming loopback", EnvPprof, addr, err)
		}
	}
	t.Setenv(EnvPprof, "")
	if err := startPprof(); err != nil {
		t.Errorf("unset: %v", err)
	}
	t.Setenv(EnvPprof, "127.0.0.1:0")
	if err := startPprof(); err != nil {
		t.Errorf("loopback: %v", err)
	}
}
