package chaos

import (
	"slices"
	"testing"
)

// LinkFail runs only with two links per node, OnPath only with one; the
// members list both addresses of each node with two.
func TestLinksModes(t *testing.T) {
	if why := checkLinks(1, "LinkFail"); why == "" {
		t.Error("LinkFail accepted with one link")
	}
	if why := checkLinks(2, "OnPath"); why == "" {
		t.Error("OnPath accepted with two links")
	}
	if why := checkLinks(2, "LinkFail") + checkLinks(1, "OnPath") + checkLinks(2, "SplitBrain"); why != "" {
		t.Errorf("refused: %s", why)
	}
	pool := []string{"LinkFail", "OnPath", "SplitBrain"}
	if got := linksPool(1, pool); !slices.Equal(got, []string{"OnPath", "SplitBrain"}) {
		t.Errorf("one-link pool %v", got)
	}
	if got := linksPool(2, pool); !slices.Equal(got, []string{"LinkFail", "SplitBrain"}) {
		t.Errorf("two-link pool %v", got)
	}
	bed := &Bed{Addr: map[string]string{"n1": "192.0.2.1", "n2": "192.0.2.2"}, Addr2: map[string]string{"n1": "198.51.100.1", "n2": "198.51.100.2"}, links: 2}
	want := "n1 = [\"192.0.2.1:10000\", \"198.51.100.1:10000\"]\nn2 = [\"192.0.2.2:10000\", \"198.51.100.2:10000\"]\n"
	if got := membersToml(bed, []string{"n1", "n2"}); got != want {
		t.Errorf("two links:\n%s\nwant\n%s", got, want)
	}
	bed = &Bed{Addr: map[string]string{"n1": "192.0.2.1"}, Addr2: map[string]string{}, links: 1}
	if got := membersToml(bed, []string{"n1"}); got != "n1 = \"192.0.2.1:10000\"\n" {
		t.Errorf("one link: %q", got)
	}
}
