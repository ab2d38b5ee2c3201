package render

import "testing"

// The tree shows at most labelWidth runes of a label (the JSON keeps it
// whole: resource's Label is not cut).
func TestShorten(t *testing.T) {
	long := "sh -c 'sleep 100000 >/dev/null 2>&1 & echo $! > /var/lib/haven/web.pid'"
	got := shorten(long, labelWidth)
	if r := []rune(got); len(r) != labelWidth || r[len(r)-1] != '…' || string(r[:labelWidth-1]) != string([]rune(long)[:labelWidth-1]) {
		t.Fatalf("shorten(%q) = %q", long, got)
	}
	if got := shorten("sleep 1", labelWidth); got != "sleep 1" {
		t.Fatalf("a short label changed: %q", got)
	}
}
