package chaos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"haven/dataset"
)

const (
	sigCONT = syscall.SIGCONT
	sigSTOP = syscall.SIGSTOP
)

// Start starts every daemon, creates the services and waits for a stable
// cluster.
func (c *Cluster) Start() error {
	if err := c.each(c.Names, true, (*Node).StartDaemon); err != nil {
		return err
	}
	if err := c.CreateServices(c.cfg.Services); err != nil {
		return err
	}
	_, err := c.waitStable(60 * time.Second)
	return err
}

// each runs f on the named nodes, at once or one after the other, and
// joins the errors.
func (c *Cluster) each(names []string, parallel bool, f func(*Node) error) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		if !parallel {
			errs[i] = f(c.Nodes[n])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c.Nodes[n])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// where is where each service runs in a stable cluster.
func (t *T) where() (map[string]string, error) { return t.C.waitStable(recoveryBound) }

// pick is a random element of s.
func pick[E any](t *T, s []E) E { return s[t.Rand.IntN(len(s))] }

// shuffled is a random permutation of the node names.
func (t *T) shuffled() []string {
	s := slices.Clone(t.C.Names)
	t.Rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// jitter is a random pause of at most d.
func (t *T) jitter(d time.Duration) {
	time.Sleep(time.Duration(t.Rand.Int64N(int64(d) + 1)))
}

// newLines returns the journal lines written after line from.
func (t *T) newLines(from int) []string {
	ev, _ := ReadJournal(t.C.Journal)
	var out []string
	for _, e := range ev {
		if e.Line > from {
			out = append(out, fmt.Sprintf("%s %s %s", e.Node, e.Svc, e.Kind))
		}
	}
	return out
}

// nothingMoved fails when a service was started or stopped since line from.
func (t *T) nothingMoved(from int, why string) error {
	if l := t.newLines(from); len(l) > 0 {
		return fmt.Errorf("%s, yet the journal has: %s", why, strings.Join(l, ", "))
	}
	return nil
}

// freeNode is a node running no service, moving one away if needed.
func (t *T) freeNode() (string, error) {
	where, err := t.where()
	if err != nil {
		return "", err
	}
	busy := map[string]bool{}
	for _, n := range where {
		busy[n] = true
	}
	var free []string
	for _, n := range t.C.Names {
		if !busy[n] {
			free = append(free, n)
		}
	}
	if len(free) > 0 {
		return pick(t, free), nil
	}
	// every node runs something: move one service next to another
	s := pick(t, t.C.Services)
	var to string
	for _, o := range t.C.Services {
		if o.Name != s.Name && where[o.Name] != where[s.Name] {
			to = where[o.Name]
		}
	}
	if to == "" {
		return "", fmt.Errorf("no node is free of a service: %v", where)
	}
	if r := t.C.Nodes[to].Run(60*time.Second, "svcmgr", "-s", s.Name, "switch", "--to", to, "--wait", "--time", "45s"); r.Code != 0 {
		return "", fmt.Errorf("switch %s to %s to free %s: %s", s.Name, to, where[s.Name], r)
	}
	t.Note("switched %s to %s to free %s", s.Name, to, where[s.Name])
	return where[s.Name], nil
}

// servicesOn lists the services running on n.
// appsOn are the services up on n in where: the failover ones
// (servicesOn), then the flex services with an instance there.
func (c *Cluster) appsOn(where map[string]string, n string) []string {
	svcs := servicesOn(where, n)
	for _, f := range c.Flex {
		if slices.Contains(flexNodes(where[f.Name]), n) && !slices.Contains(svcs, f.Name) {
			svcs = append(svcs, f.Name)
		}
	}
	return svcs
}

// killAppsOn kills (as a host crash does) the apps of every service up on
// n in where (appsOn).
func (c *Cluster) killAppsOn(where map[string]string, n string) error {
	for _, s := range c.appsOn(where, n) {
		if err := c.killApp(s, n); err != nil {
			return err
		}
	}
	return nil
}

func servicesOn(where map[string]string, n string) []string {
	var out []string
	for s, w := range where {
		if w == n {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// sees reports whether node a's daemon sees node b with status st.
func (c *Cluster) sees(a, b string, st dataset.NodeStatus) bool {
	s, err := c.Nodes[a].Status()
	return err == nil && s.Nodes[b].Status == st
}

// upOnlyOn waits until svc is up on exactly one node of among, in every
// view of the nodes of among, and returns that node.
func (c *Cluster) upOnlyOn(svc string, among []string, within time.Duration) (string, error) {
	var got string
	err := waitUntil(within, func() bool {
		got = ""
		for _, n := range among {
			st, err := c.Nodes[n].Status()
			if err != nil {
				return false
			}
			var up []string
			for node, i := range st.Services[svc].Instances {
				if i.Avail == dataset.StatusUp {
					up = append(up, node)
				}
			}
			if len(up) != 1 || !slices.Contains(among, up[0]) || (got != "" && got != up[0]) {
				return false
			}
			got = up[0]
		}
		return true
	}, "%s not up on exactly one of %v within %s", svc, among, within)
	return got, err
}

// appPid is the pid of svc's app on n (0 when none).
func (c *Cluster) appPid(svc, n string) int {
	for pid, node := range c.appProcs(svc) {
		if node == n {
			return pid
		}
	}
	return 0
}

// killApp kills svc's app on n with SIGKILL and journals its end, as the
// stop script would have.
func (c *Cluster) killApp(svc, n string) error {
	pid := c.appPid(svc, n)
	if pid == 0 {
		return nil
	}
	c.markEnding(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	if err := waitUntil(5*time.Second, func() bool { return !alive(pid) }, "app %d of %s still alive", pid, svc); err != nil {
		return err
	}
	return c.journalStop(n, svc)
}
