package render

import (
	"fmt"
	"strings"

	"haven/api"
	"haven/dataset"
)

// linksMark is the mark of a peer heard on fewer than all of its heartbeat
// links: " links 1/2" (an alarm: the peer is up), "" otherwise.
func linksMark(ls []dataset.HBLink) string {
	up := 0
	for _, l := range ls {
		if l.Up {
			up++
		}
	}
	if len(ls) < 2 || up == len(ls) {
		return ""
	}
	return fmt.Sprintf(" links %d/%d", up, len(ls))
}

// apiLinksText is the link state of a peer in the daemon status:
// " links 1/2 (net2 down)", "" when every link is up or it has one.
func apiLinksText(ls []api.LinkStatus) string {
	var down []string
	for _, l := range ls {
		if !l.Up {
			down = append(down, l.Name)
		}
	}
	if len(ls) < 2 || len(down) == 0 {
		return ""
	}
	return fmt.Sprintf(" links %d/%d (%s down)", len(ls)-len(down), len(ls), strings.Join(down, ", "))
}
