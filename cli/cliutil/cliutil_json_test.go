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
	// (dataset.Instance's times print as 0001-01-01 when never set with
	// PrintJSON: their JSON is also the heartbeat's, whose digest a
	// mixed-version cluster must agree on; the status object is printed
	// with PrintStatusJSON, which leaves them out)
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

// The printed status object leaves out the times never set, those of the
// heartbeat's format included (a resource's last_failure_at, an
// instance's state_since), and keeps them when set; a string holding the
// same text is kept as it is; the form is PrintJSON's.
func TestPrintStatusJSONLeavesNeverOut(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	label := `x","last_failure_at":"0001-01-01T00:00:00Z"`
	s := dataset.ServiceStatus{Avail: dataset.StatusUp, Instances: map[string]dataset.Instance{
		"n1": {Avail: dataset.StatusUp, Resources: map[string]dataset.Resource{
			"app#a": {Status: dataset.StatusUp, Label: label},
			"app#b": {Status: dataset.StatusUp, LastFailure: "check says down", LastFailureAt: at},
		}},
		"n2": {Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle, StateSince: at}},
	}}
	var b, plain bytes.Buffer
	if err := PrintStatusJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "0001-01-01T00:00:00Z") != 1 || strings.Count(out, `"last_failure_at"`) != 1 || strings.Count(out, `"state_since"`) != 1 {
		t.Fatalf("the times never set are printed (or a string was cut):\n%s", out)
	}
	for _, want := range []string{`"last_failure_at": "2030-01-02T03:04:05Z"`, `"state_since": "2030-01-02T03:04:05Z"`, `"label": "x\",\"last_failure_at\":\"0001-01-01T00:00:00Z\""`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %s:\n%s", want, out)
		}
	}
	// the same layout as PrintJSON, less those lines
	PrintJSON(&plain, s)
	var kept []string
	for _, l := range strings.Split(plain.String(), "\n") {
		if !strings.Contains(l, `": "0001-01-01T00:00:00Z"`) {
			kept = append(kept, l)
		}
	}
	if got := strings.Join(kept, "\n"); strings.ReplaceAll(got, ",\n", "\n") != strings.ReplaceAll(out, ",\n", "\n") {
		t.Errorf("layout differs from PrintJSON's:\n%s\nwant\n%s", out, got)
	}
}
