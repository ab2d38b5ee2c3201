package daemon

import (
	"testing"

	"haven/config"
	"haven/guard"
)

// The config's guard numbers are the guard's own: the peers count
// config.GuardAct after a lease, the guard's action is bounded by
// guard.ActBound.
func TestGuardNumbersAgree(t *testing.T) {
	if config.GuardAct != guard.ActBound {
		t.Fatalf("config.GuardAct %s, guard.ActBound %s", config.GuardAct, guard.ActBound)
	}
}
