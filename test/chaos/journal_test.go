package chaos

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestJournalOverlaps(t *testing.T) {
	j := `10.00 n1 svc1 start
11.00 n1 svc2 start
12.00 n1 svc1 stop
12.00 n2 svc1 start
13.50 n3 svc1 start
14.00 n3 svc1 stop
14.10 n3 svc1 stop
15.00 n1 svc2 stop
15.00 n1 svc2 stop
16.00 n2 svc2 start
17.00 n3 svc2 start
18.00 n1 svc2 start
19.00 n2 svc2 stop
`
	ev, err := ParseJournal(strings.NewReader(j), "j")
	if err != nil {
		t.Fatal(err)
	}
	got := Overlaps(ev)
	want := []Overlap{
		{Svc: "svc1", Nodes: []string{"n2", "n3"}, Start: 13.5, End: 14, Line: 5, Max: 1},
		{Svc: "svc2", Nodes: []string{"n1", "n2", "n3"}, Start: 17, Line: 11, Max: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overlaps\n got %+v\nwant %+v", got, want)
	}
	if s := got[1].String(); !strings.Contains(s, "svc2 up on n1+n2+n3 at once from t=17.00 (journal line 11), still open") {
		t.Fatalf("String() = %q", s)
	}
	up := UpAt(ev)
	if !reflect.DeepEqual(up["svc1"], []string{"n2"}) || !reflect.DeepEqual(up["svc2"], []string{"n1", "n3"}) {
		t.Fatalf("UpAt = %v", up)
	}
}

func TestJournalBadLine(t *testing.T) {
	for _, line := range []string{"12 n1 svc1 begin", "x n1 svc1 start", "12 n1 start"} {
		_, err := ParseJournal(strings.NewReader("1 n1 svc1 start\n"+line+"\n"), "jj")
		if err == nil || !strings.Contains(err.Error(), "jj:2:") {
			t.Fatalf("%q: err %v, want one naming jj:2", line, err)
		}
	}
}

// A flex service may be up on flex_max nodes: only a start beyond that is
// an excess, and it ends when a stop brings the count back to flex_max.
func TestJournalExcessOfAFlexService(t *testing.T) {
	j := `10.00 n1 flex1 start
10.10 n2 flex1 start
11.00 n3 flex1 start
11.50 n1 flex1 stop
12.00 n1 flex1 start
12.00 n1 svc1 start
13.00 n2 svc1 start
`
	ev, err := ParseJournal(strings.NewReader(j), "j")
	if err != nil {
		t.Fatal(err)
	}
	got := Excess(ev, Limits{"flex1": 2})
	want := []Overlap{
		{Svc: "flex1", Nodes: []string{"n1", "n2", "n3"}, Start: 11, End: 11.5, Line: 3, Max: 2},
		{Svc: "flex1", Nodes: []string{"n1", "n2", "n3"}, Start: 12, Line: 5, Max: 2},
		{Svc: "svc1", Nodes: []string{"n1", "n2"}, Start: 13, Line: 7, Max: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("excess\n got %+v\nwant %+v", got, want)
	}
	if s := got[0].String(); !strings.Contains(s, "flex1 up on n1+n2+n3 at once (flex_max 2) from t=11.00 (journal line 3), for 0.50s") {
		t.Fatalf("String() = %q", s)
	}
	if len(Overlaps(ev)) != 2 {
		t.Fatalf("without limits flex1 is a failover service: %v", Overlaps(ev))
	}
}

func TestJournalLimitsFile(t *testing.T) {
	j := filepath.Join(t.TempDir(), "journal")
	if l, err := ReadLimits(j); err != nil || l.Of("svc1") != 1 {
		t.Fatalf("no file: %v %v", l, err)
	}
	if err := os.WriteFile(LimitsPath(j), []byte("flex1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadLimits(j); err != nil || l.Of("flex1") != 2 || l.Of("svc1") != 1 {
		t.Fatalf("limits: %v %v", l, err)
	}
	if err := os.WriteFile(LimitsPath(j), []byte("flex1 two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLimits(j); err == nil || !strings.Contains(err.Error(), "journal.limits:1") {
		t.Fatalf("bad line: %v", err)
	}
}
