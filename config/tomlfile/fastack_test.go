package tomlfile

import (
	"strings"
	"testing"
)

// node.ready_fast_ack is read from node.toml (default false); a value that
// is not a boolean is refused naming the file, the line and the key.
func TestReadyFastAckKeyword(t *testing.T) {
	c, err := ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n"))
	if err != nil || c.ReadyFastAck {
		t.Fatalf("default: got %v, %v; want false, nil", c.ReadyFastAck, err)
	}
	c, err = ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nready_fast_ack = true\n"))
	if err != nil || !c.ReadyFastAck {
		t.Fatalf("ready_fast_ack = true: got %v, %v; want true, nil", c.ReadyFastAck, err)
	}
	_, err = ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nready_fast_ack = \"yes\"\n"))
	if err == nil || !strings.Contains(err.Error(), "node.toml") || !strings.Contains(err.Error(), ":3") ||
		!strings.Contains(err.Error(), "ready_fast_ack") {
		t.Fatalf("ready_fast_ack = \"yes\": got %v, want an error naming node.toml, line 3 and the key", err)
	}
	t.Log(err)
}
