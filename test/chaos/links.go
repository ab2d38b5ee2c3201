package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Two links per node (Config.Links = 2, `make chaos LINKS=2`): every node
// joins a second bridge (eth1, 198.51.100.N) and cluster.toml lists both
// addresses of each member. Cut and the partitions take every link of a
// node, so that the other tests keep their meaning; LinkFail cuts one.
// OnPath's attacker sits on the first link only: it is left out of a
// two-link round.

// linksOnly are the tests that need two links; linksNot those that cannot
// run with two.
var (
	linksOnly = []string{"LinkFail"}
	linksNot  = []string{"OnPath"}
)

// checkLinks refuses a test named for a round whose links it cannot run
// with ("" when it can).
func checkLinks(links int, name string) string {
	switch {
	case links < 2 && slices.Contains(linksOnly, name):
		return name + " needs two links per node (-links 2, make chaos LINKS=2)"
	case links >= 2 && slices.Contains(linksNot, name):
		return name + " attacks the first link only: it does not run with two links per node"
	}
	return ""
}

// linksPool removes from pool the tests the round's links cannot run.
func linksPool(links int, pool []string) []string {
	return slices.DeleteFunc(slices.Clone(pool), func(n string) bool { return checkLinks(links, n) != "" })
}

// membersToml is the [nodes] section of the bed's members: one address per
// link.
func membersToml(bed *Bed, names []string) string {
	var b strings.Builder
	for _, n := range names {
		addrs := bed.HBAddrs(n)
		if len(addrs) == 1 {
			fmt.Fprintf(&b, "%s = %q\n", n, addrs[0])
			continue
		}
		fmt.Fprintf(&b, "%s = [%q, %q]\n", n, addrs[0], addrs[1])
	}
	return b.String()
}

// linkFailFor is how long LinkFail keeps a link cut: two to five
// hb.timeout, so that the link is declared down for a while.
func linkFailFor(t *T) time.Duration {
	return 2*hbTimeout + time.Duration(t.Rand.Int64N(int64(3*hbTimeout)))
}

// testLinkFail cuts one link of a random node (maybe one running a
// service) for a while: the link is reported down and up again (an alarm),
// while no node is declared down, nobody votes and nothing moves.
func testLinkFail(t *T) error {
	if why := checkLinks(t.C.Bed.Links(), "LinkFail"); why != "" {
		return fmt.Errorf("%s", why)
	}
	where, err := t.where()
	if err != nil {
		return err
	}
	from := t.C.journalLines()
	n := pick(t, t.C.Names)
	link := t.Rand.IntN(2)
	d := linkFailFor(t)
	logs := t.C.logSizes()
	t.Fault("link net%d of %s (runs %s) cut for %s", link+1, n, orNone(servicesOn(where, n)), d.Round(100*time.Millisecond))
	if err := t.C.Bed.CutLink(n, link, true); err != nil {
		return err
	}
	downs := t.downsUntil(time.Now().Add(d))
	alarms := t.C.newLogLines(logs, `"event": "link_down"`)
	t.Fault("link net%d of %s restored (%d link down reports)", link+1, n, len(alarms))
	if err := t.C.Bed.CutLink(n, link, false); err != nil {
		return err
	}
	var errs []string
	if len(alarms) == 0 {
		errs = append(errs, fmt.Sprintf("link net%d of %s cut for %s (hb.timeout %s) was never reported down", link+1, n, d, hbTimeout))
	}
	if err := waitUntil(3*hbTimeout, func() bool { return len(t.C.newLogLines(logs, `"event": "link_up"`)) > 0 }, ""); err != nil {
		errs = append(errs, fmt.Sprintf("link net%d of %s restored was never reported up again within %s", link+1, n, 3*hbTimeout))
	}
	downs = append(downs, t.C.newLogLines(logs, `"event": "peer_down"`)...)
	if len(downs) > 0 {
		errs = append(errs, fmt.Sprintf("a node declared down with one link of two cut: %s", strings.Join(downs[:min(len(downs), 5)], ", ")))
	}
	if v := t.C.newLogLines(logs, `"event": "quorum_vote"`); len(v) > 0 {
		errs = append(errs, fmt.Sprintf("a vote with one link of two cut: %s", v[0]))
	}
	if _, err := t.where(); err != nil {
		errs = append(errs, err.Error())
	}
	if err := t.nothingMoved(from, "one link of two cut must move nothing"); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no service"
	}
	return strings.Join(s, ", ")
}
