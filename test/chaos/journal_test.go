package chaos

import (
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
		{Svc: "svc1", Nodes: []string{"n2", "n3"}, Start: 13.5, End: 14, Line: 5},
		{Svc: "svc2", Nodes: []string{"n1", "n2", "n3"}, Start: 17, Line: 11},
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
