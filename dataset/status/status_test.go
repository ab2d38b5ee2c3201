package status

import (
	"fmt"
	"testing"

	"haven/dataset"
)

const (
	up    = dataset.StatusUp
	down  = dataset.StatusDown
	warn  = dataset.StatusWarn
	na    = dataset.StatusNA
	sup   = dataset.StatusStdbyUp
	sdown = dataset.StatusStdbyDown
	unk   = dataset.StatusUnknown
)

// r is a plain resource, o an optional one, d a disabled one.
func r(s dataset.Status) dataset.Resource { return dataset.Resource{Status: s} }
func o(s dataset.Status) dataset.Resource { return dataset.Resource{Status: s, Optional: true} }
func d(s dataset.Status) dataset.Resource { return dataset.Resource{Status: s, Disabled: true} }

func TestInstance(t *testing.T) {
	tests := []struct {
		name         string
		res          []dataset.Resource
		avail, overa dataset.Status
	}{
		{"no resource", nil, na, na},
		{"all up", []dataset.Resource{r(up), r(up)}, up, up},
		{"all down", []dataset.Resource{r(down), r(down)}, down, down},
		{"up and down", []dataset.Resource{r(up), r(down)}, warn, warn},
		{"any warn", []dataset.Resource{r(up), r(warn)}, warn, warn},
		{"warn among downs", []dataset.Resource{r(down), r(warn)}, warn, warn},
		{"n/a ignored with up", []dataset.Resource{r(up), r(na)}, up, up},
		{"n/a ignored with down", []dataset.Resource{r(down), r(na)}, down, down},
		{"all n/a", []dataset.Resource{r(na), r(na)}, na, na},
		{"empty status ignored", []dataset.Resource{r(""), r(up)}, up, up},
		{"unknown counts as warn", []dataset.Resource{r(up), r(unk)}, warn, warn},
		{"optional down: overall only", []dataset.Resource{r(up), o(down)}, up, warn},
		{"optional warn: overall only", []dataset.Resource{r(down), o(warn)}, down, warn},
		{"only optional up", []dataset.Resource{o(up)}, na, up},
		{"optional n/a", []dataset.Resource{r(up), o(na)}, up, up},
		{"disabled down ignored", []dataset.Resource{r(up), d(down)}, up, up},
		{"disabled warn ignored", []dataset.Resource{r(down), d(warn)}, down, down},
		{"only disabled", []dataset.Resource{d(up)}, na, na},
		{"stdby up with up", []dataset.Resource{r(up), r(sup)}, up, up},
		{"stdby up with down", []dataset.Resource{r(down), r(sup)}, down, down},
		{"stdby down with up", []dataset.Resource{r(up), r(sdown)}, warn, warn},
		{"stdby down with down", []dataset.Resource{r(down), r(sdown)}, down, down},
		{"only stdby up", []dataset.Resource{r(sup), r(sup)}, sup, sup},
		{"only stdby down", []dataset.Resource{r(sdown)}, sdown, sdown},
		{"stdby mixed", []dataset.Resource{r(sup), r(sdown)}, warn, warn},
		{"stdby up and n/a", []dataset.Resource{r(sup), r(na)}, sup, sup},
		{"stdby with warn", []dataset.Resource{r(sup), r(warn)}, warn, warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := map[string]dataset.Resource{}
			for i, x := range tt.res {
				res[fmt.Sprintf("app#r%d", i)] = x
			}
			avail, overall := Instance(res)
			if avail != tt.avail || overall != tt.overa {
				t.Errorf("Instance(%v) = (%q, %q), want (%q, %q)", tt.res, avail, overall, tt.avail, tt.overa)
			}
		})
	}
}

func TestService(t *testing.T) {
	tests := []struct {
		name   string
		avails []dataset.Status
		want   dataset.Status
	}{
		{"no instance", nil, na},
		{"one up", []dataset.Status{up, down, down}, up},
		{"one up alone", []dataset.Status{up}, up},
		{"two up", []dataset.Status{up, up, down}, warn},
		{"all down", []dataset.Status{down, down}, down},
		{"warn and down", []dataset.Status{warn, down}, warn},
		{"warn beats one up", []dataset.Status{up, warn}, warn},
		{"only n/a", []dataset.Status{na, na}, na},
		{"n/a and down", []dataset.Status{na, down}, down},
		{"n/a and up", []dataset.Status{na, up}, up},
		{"stdby up is not serving", []dataset.Status{sup, sup}, down},
		{"stdby and one up", []dataset.Status{up, sup, sdown}, up},
		{"unknown ignored", []dataset.Status{unk, up}, up},
		{"only unknown", []dataset.Status{unk}, na},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Service(tt.avails); got != tt.want {
				t.Errorf("Service(%v) = %q, want %q", tt.avails, got, tt.want)
			}
		})
	}
}

func TestFlex(t *testing.T) {
	for _, c := range []struct {
		up, min, target int
		want            dataset.Status
	}{
		{0, 1, 3, dataset.StatusDown}, {1, 2, 3, dataset.StatusDown}, {2, 2, 3, dataset.StatusWarn},
		{3, 2, 3, dataset.StatusUp}, {4, 2, 3, dataset.StatusWarn}, {0, 0, 2, dataset.StatusDown},
	} {
		if got := Flex(c.up, c.min, c.target); got != c.want {
			t.Errorf("Flex(%d, %d, %d) = %s, want %s", c.up, c.min, c.target, got, c.want)
		}
	}
}
