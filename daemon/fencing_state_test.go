package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// The fencing tokens survive the state file; a file written before them
// (TestDurableOldFormat) still loads, with none.
func TestDurableKeepsFencingTokens(t *testing.T) {
	d := sampleDurable()
	s := d.Services["web"]
	s.FencingToken, s.FencingSeen = 7, 9
	d.Services["web"] = s
	got := roundTrip(t, d)
	if w := got.Services["web"]; w.FencingToken != 7 || w.FencingSeen != 9 {
		t.Fatalf("got tokens %d/%d after a round trip, want 7/9", w.FencingToken, w.FencingSeen)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(oldFormat), 0o600)
	if got, err := loadDurable(path); err != nil || got.Services["web"].FencingToken != 0 {
		t.Fatalf("old format: %+v, %v", got.Services["web"], err)
	}
}
