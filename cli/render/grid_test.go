package render

import (
	"strings"
	"testing"
)

// The web view's grid is the svcmon grid: the same rows, cells
// and notes, in the same order, for every fixture (stale, frozen, quorum,
// heartbeat, config errors).
func TestSvcmonGridIsTheSvcmonView(t *testing.T) {
	for name, st := range cases() {
		text := Svcmon(st, SvcmonOptions{})
		var want, got []string
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, " | ") || strings.HasSuffix(l, " |") {
				want = append(want, strings.Join(strings.Fields(strings.Replace(l, " |", "", 1)), " "))
			}
		}
		g := SvcmonGrid(st, nil)
		for _, s := range g.Sections {
			for _, r := range s.Rows {
				var parts []string
				for _, c := range append(r.Left, r.Cells...) {
					if c.Text != "" {
						parts = append(parts, c.Text)
					}
				}
				got = append(got, strings.Join(strings.Fields(strings.Join(parts, " ")), " "))
				if s.Title == "Services" && r.Service != r.Left[0].Text {
					t.Errorf("%s: row %v: service %q", name, r.Left, r.Service)
				}
			}
			for _, n := range s.Notes {
				if !strings.Contains(text, " "+n+"\n") {
					t.Errorf("%s: note %q not in svcmon", name, n)
				}
			}
		}
		if len(want) < 3 {
			t.Fatalf("%s: svcmon rows %q", name, want)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: grid rows\n%s\nsvcmon rows\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, h := range g.Header {
			if !strings.Contains(text, h) {
				t.Errorf("%s: header %q not in svcmon", name, h)
			}
		}
	}
}
