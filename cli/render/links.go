package render

import (
	"fmt"
	"strings"

	"haven/api"
	"haven/dataset"
)

// linksMark is the mark of a peer heard on fewer than all of its heartbeat
// links, or with a link that passes beats but not data: " links 1/2",
// " links 2/2 degraded" (an alarm: the peer is up), "" otherwise.
func linksMark(ls []dataset.HBLink) string {
	up, degraded := 0, false
	for _, l := range ls {
		if l.Up {
			up++
		}
		degraded = degraded || l.Up && l.Degraded
	}
	switch {
	case len(ls) < 2 || up == len(ls) && !degraded:
		return ""
	case degraded:
		return fmt.Sprintf(" links %d/%d degraded", up, len(ls))
	}
	return fmt.Sprintf(" links %d/%d", up, len(ls))
}

// apiLinksText is the link state of a peer in the daemon status:
// " links 1/2 (net2 down)", " links 2/2 (net1 degraded)", "" when every
// link is up and carries data, or it has one.
func apiLinksText(ls []api.LinkStatus) string {
	var down, degraded []string
	for _, l := range ls {
		switch {
		case !l.Up:
			down = append(down, l.Name+" down")
		case l.Degraded:
			degraded = append(degraded, l.Name+" degraded")
		}
	}
	if len(ls) < 2 || len(down)+len(degraded) == 0 {
		return ""
	}
	return fmt.Sprintf(" links %d/%d (%s)", len(ls)-len(down), len(ls), strings.Join(append(down, degraded...), ", "))
}
