package node

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"haven/config"
)

// TestFeatureLevelSaysOrdersSigned: with admin keys, the move to level 2
// says that a peer's deletions and targets now need a signature, and
// ordersSigned turns on with it.
func TestFeatureLevelSaysOrdersSigned(t *testing.T) {
	c := levelNode(t, State{})
	c.cfg.Admin = config.SignatureCheck{Cluster: "prod", Keys: map[string]ed25519.PublicKey{"alice": make([]byte, ed25519.PublicKeySize)}}
	now := t0.Add(time.Second)
	hearFormat(c, "n2", 2, 1, now)
	c.Ready()
	if c.ordersSigned() {
		t.Fatal("orders signed at level 1")
	}
	hearFormat(c, "n3", 2, 1, now)
	ev := levelEvents(c.Ready())
	if len(ev) != 1 || !strings.Contains(ev[0], "1 -> 2") || !strings.Contains(ev[0], "now needs an admin's signature") || !c.ordersSigned() {
		t.Fatalf("events %q, orders signed %v", ev, c.ordersSigned())
	}
}
