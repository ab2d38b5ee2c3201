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
	b, err := encodeDurable(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := got.Services["web"]; w.FencingToken != 7 || w.FencingSeen != 9 {
		t.Fatalf("got tokens %d/%d after a round trip, want 7/9", w.FencingToken, w.FencingSeen)
	}
	os.WriteFile(path, []byte(oldFormat), 0o600)
	if got, err := loadDurable(path); err != nil || got.Services["web"].FencingToken != 0 {
		t.Fatalf("old format: %+v, %v", got.Services["web"], err)
	}
}
