package cliutil

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// JSON output is for people and programs: <, > and & as they are, and a
// time never set is left out, not 0001-01-01T00:00:00Z.
func TestPrintJSONIsPlain(t *testing.T) {
	// (dataset.Instance's times still print as 0001-01-01 when never set:
	// their JSON is also the heartbeat's, whose digest a mixed-version
	// cluster must agree on; they change with the versioned formats)
	v := dataset.ArbitratorState{Name: "sh -c 'a > b && c < d'"}
	for _, print := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return PrintJSON(b, v) },
		func(b *bytes.Buffer) error { return PrintJSONLine(b, v) },
	} {
		var b bytes.Buffer
		if err := print(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "a > b && c < d") {
			t.Errorf("escaped for HTML: %s", out)
		}
		if strings.Contains(out, "0001-01-01") || strings.Contains(out, "probed_at") {
			t.Errorf("a time never set is printed: %s", out)
		}
	}
	v.ProbedAt = time.Unix(1, 0)
	var b bytes.Buffer
	PrintJSON(&b, v)
	if !strings.Contains(b.String(), "probed_at") {
		t.Errorf("a time set is left out: %s", b.String())
	}
}
