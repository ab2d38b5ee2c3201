package node

import (
	"testing"

	"haven/config"
)

// The link events may be named by hooks.
func TestLinkEventKindsListed(t *testing.T) {
	for _, e := range []Event{LinkDown{}, LinkUp{}} {
		found := false
		for _, k := range config.EventKinds {
			found = found || k == e.Kind()
		}
		if !found {
			t.Errorf("event kind %q (%T) missing from config.EventKinds", e.Kind(), e)
		}
	}
}
