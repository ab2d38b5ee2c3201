package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// The persister writes the newest state, wait returns once a state is on
// disk, and close flushes what is pending.
func TestPersisterWritesNewestAndWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var errs []error
	p := newPersister(path, func(err error) { errs = append(errs, err) })
	for i := uint64(1); i <= 50; i++ {
		p.submit(i, []byte{byte('0' + i%10)})
	}
	p.wait(50)
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "0" {
		t.Fatalf("after wait(50) the file holds %q (%v), want state 50 (\"0\")", b, err)
	}
	p.submit(51, []byte("last"))
	p.close()
	if b, _ := os.ReadFile(path); string(b) != "last" {
		t.Fatalf("close did not flush the pending state: file holds %q", b)
	}
	p.wait(99) // closed: must not block
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}

func TestDurableRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	d := durable{Lamport: 7, NodeFrozen: true, Services: map[string]durableService{"web": {Frozen: true, LocalExpect: "started"}}}
	b, err := encodeDurable(d)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o600)
	got, err := loadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lamport != 7 || !got.NodeFrozen || !got.Services["web"].Frozen || got.Services["web"].LocalExpect != "started" {
		t.Fatalf("round trip lost data: %+v", got)
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := loadDurable(path); err == nil {
		t.Fatal("a corrupt state file was accepted")
	}
}
