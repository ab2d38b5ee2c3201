package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"haven/dataset"
)

// testRollout: config edits of a service (the flex service of the round,
// else svc1) and rollouts of them started at random from random nodes
// while faults run beside them (kill -9 of a daemon brought back later, a
// node cut off and healed); one version in three is bad: its start fails
// on one node (start.sh's bad versions, badnode-NODE). Then, every fault
// over, the audits of the kind on top of the round's (never twice, a flex
// service never above flex_max, in the journal):
//
//   - no lost acknowledged edit: every node holds the config of the last
//     edit answered ok, or of one asked after it, or the config a
//     rollback of a rollout accepted after that edit installed again (the
//     automatic rollback undoes the edit it rolled out, as a newer edit);
//   - no lost acknowledged rollout: the newest rollout every node holds
//     is the last one answered "accepted", or one asked after it;
//   - every rollout ends: in every view the newest one is in a final
//     state (dataset.RolloutStatus.Ended: done, paused, done with
//     failures, or any end a later release adds) within rolloutEndBound
//     of the faults' end, every node up;
//
// and the service is put back on its first config by a last rollout
// (every start working again), for the round's audits.
func testRollout(t *T) error {
	if _, err := t.where(); err != nil {
		return err
	}
	s := t.C.Services[0]
	if len(t.C.Flex) > 0 {
		s = t.C.Flex[0]
	}
	if !t.C.Quorum() {
		t.promised = false
	}
	bad := pick(t, s.Nodes)
	marker := filepath.Join(t.C.Work, "badnode-"+bad)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(marker)
	start := filepath.Join(t.C.Work, "start.sh") + " {name} {nodename} {var}"

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var faults []string
	var faultErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		faults, faultErr = t.rolloutFaults(stop)
	}()

	var versions, acked, rollouts, accepted []string
	var sinceAck []string // the rollouts accepted since the last acknowledged edit
	var edits, refused int
	idRe := regexp.MustCompile(`rollout (\S+) accepted`)
	end := time.Now().Add(rolloutFor)
	for k := 1; time.Now().Before(end); k++ {
		v := fmt.Sprintf("v%d", k)
		if t.Rand.IntN(3) == 0 {
			v = fmt.Sprintf("bad%d", k)
		}
		versions = append(versions, v)
		n := t.C.Nodes[pick(t, t.C.Names)]
		edits++
		if r := n.Run(20*time.Second, "svcmgr", "-s", s.Name, "set", "--kw", "app#main.start="+start+" "+v); r.Code == 0 {
			acked = append(acked, v)
			sinceAck = nil
		} else {
			refused++
		}
		t.jitter(2 * time.Second)
		m := t.C.Nodes[pick(t, s.Nodes)]
		rollouts = append(rollouts, m.Name+":"+v)
		if r := m.Run(20*time.Second, "svcmgr", "-s", s.Name, "rollout"); r.Code == 0 {
			if id := idRe.FindStringSubmatch(r.Out); id != nil {
				accepted = append(accepted, id[1])
				sinceAck = append(sinceAck, id[1])
			}
		}
		t.jitter(6 * time.Second)
	}
	close(stop)
	wg.Wait()
	t.Fault("%d edits of %s (%d bad, failing on %s; %d not acknowledged) and %d rollouts asked (%d accepted) at random while: %s",
		edits, s.Name, countBad(versions), bad, refused, len(rollouts), len(accepted), strings.Join(faults, "; "))
	if faultErr != nil {
		return faultErr
	}
	var errs []error
	if t.C.Quorum() {
		errs = append(errs, t.thawLosers(t.quorumLosers()))
	}
	if err := waitUntil(recoveryBound, func() bool { return t.C.allUp() == nil }, ""); err != nil {
		return errors.Join(append(errs, fmt.Errorf("after the faults: %v", t.C.allUp()))...)
	}
	errs = append(errs, t.editsKept(s.Name, versions, acked, sinceAck))
	errs = append(errs, t.rolloutsEnd(s.Name, accepted))

	// back to the first config, every start working again
	os.Remove(marker)
	if err := t.C.Nodes[t.C.Names[0]].must(30*time.Second, "svcmgr", "-s", s.Name, "set", "--kw", "app#main.start="+start); err != nil {
		return errors.Join(append(errs, fmt.Errorf("restore the config of %s: %w", s.Name, err))...)
	}
	for _, n := range s.Nodes {
		errs = append(errs, t.clearFailed(s.Name, n))
	}
	r := t.C.Nodes[t.C.Names[0]].Run(rolloutEndBound+10*time.Second, "svcmgr", "-s", s.Name, "rollout", "--wait", "--time", rolloutEndBound.String())
	if r.Code != 0 {
		errs = append(errs, fmt.Errorf("the rollout of the first config back: %s", r))
	}
	for _, n := range s.Nodes {
		errs = append(errs, t.clearFailed(s.Name, n))
	}
	t.Note("%s put back on its first config: %s", s.Name, strings.TrimSpace(r.Out))
	return errors.Join(errs...)
}

// Bounds of the Rollout kind.
const (
	rolloutFor      = 40 * time.Second // edits and rollouts asked meanwhile
	rolloutEndBound = 90 * time.Second // the newest rollout in a final state, every node up
)

func countBad(vs []string) int {
	k := 0
	for _, v := range vs {
		if strings.HasPrefix(v, "bad") {
			k++
		}
	}
	return k
}

// rolloutFaults runs faults until stop: kill -9 of a random daemon,
// started again 0.5 to 2 hb.timeout later, or a random node cut off from
// the others and the arbitrator for 0.3 to 1.5 hb.timeout; a pause of up
// to 3 s between them. It returns what it did.
func (t *T) rolloutFaults(stop <-chan struct{}) ([]string, error) {
	var did []string
	kills, cuts := 0, 0
	for {
		select {
		case <-stop:
			return []string{fmt.Sprintf("%d kill -9 of a daemon, %d cuts of a node (%s)", kills, cuts, strings.Join(did, ", "))}, nil
		default:
		}
		n := pick(t, t.C.Names)
		d := time.Duration(float64(hbTimeout) * (0.3 + 1.5*t.Rand.Float64()))
		t.mu.Lock()
		t.lastFault = time.Now()
		t.mu.Unlock()
		if t.Rand.IntN(2) == 0 {
			if err := t.C.Nodes[n].Kill9(); err != nil {
				return did, err
			}
			time.Sleep(d)
			if err := t.C.Nodes[n].StartDaemon(); err != nil {
				return did, err
			}
			kills++
			did = append(did, "kill "+n+" "+round(d))
		} else {
			if err := t.C.Bed.Partition([]string{n}, append(t.C.others(n), "arb")); err != nil {
				return did, err
			}
			time.Sleep(d)
			if err := t.C.Bed.Heal(); err != nil {
				return did, err
			}
			cuts++
			did = append(did, "cut "+n+" "+round(d))
		}
		t.mu.Lock()
		t.lastFault = time.Now()
		t.mu.Unlock()
		t.jitter(3 * time.Second)
	}
}

// allUp is nil once every daemon runs and sees every node up.
func (c *Cluster) allUp() error {
	for _, n := range c.Names {
		if !c.Nodes[n].DaemonAlive() {
			return fmt.Errorf("the daemon of %s is not running", n)
		}
		st, err := c.Nodes[n].Status()
		if err != nil {
			return err
		}
		for _, o := range c.Names {
			if s := st.Nodes[o].Status; s != dataset.NodeUp {
				return fmt.Errorf("%s sees %s %s", n, o, s)
			}
		}
	}
	return nil
}

// editsKept: every node's config of svc holds the last acknowledged
// version, or one asked after it (an edit answered with an error may have
// been installed all the same), or the config a rollback installed again
// (update_failure_action rollback, the default) when it undoes a rollout
// accepted after that edit (later: one of them rolled the edit out, and
// the rollback is a newer edit of its own).
func (t *T) editsKept(svc string, asked, acked, laterRollouts []string) error {
	if len(acked) == 0 {
		return nil
	}
	last := acked[len(acked)-1]
	ok := asked[slices.Index(asked, last):]
	var why string
	err := waitUntil(configBound, func() bool {
		for _, n := range t.C.Names {
			b, err := os.ReadFile(filepath.Join(t.C.Nodes[n].Root, "etc", "services", svc+".toml"))
			if err != nil {
				why = err.Error()
				return false
			}
			if !slices.ContainsFunc(ok, func(v string) bool { return strings.Contains(string(b), "{var} "+v+`"`) }) && !t.rolledBack(n, svc, b, laterRollouts) {
				why = fmt.Sprintf("%s holds a config of %s without the last acknowledged edit (%s) nor a later one (%v)", n, svc, last, ok[1:])
				return false
			}
		}
		return true
	}, "")
	if err != nil {
		return fmt.Errorf("lost acknowledged edit: %s", why)
	}
	return nil
}

// rolledBack: the newest rollout node n holds of svc is a rollback of one
// of rollouts, and raw (n's config) is the config it installed again.
func (t *T) rolledBack(n, svc string, raw []byte, rollouts []string) bool {
	st, err := t.C.Nodes[n].Status()
	if err != nil {
		return false
	}
	r := st.Services[svc].Rollout
	if r == nil || r.Digest != dataset.ConfigDigest(raw) {
		return false
	}
	return slices.ContainsFunc(rollouts, func(id string) bool { return strings.HasPrefix(r.Summary, "rollback of "+id+":") })
}

// rolloutsEnd: the newest rollout every node holds of svc is the last
// one accepted (or one asked after it: its answer lost), and ends, in
// every view, within rolloutEndBound.
func (t *T) rolloutsEnd(svc string, accepted []string) error {
	if len(accepted) == 0 {
		t.Note("no rollout of %s accepted", svc)
		return nil
	}
	last := accepted[len(accepted)-1]
	var why string
	states := map[string]string{}
	from := time.Now()
	err := waitUntil(rolloutEndBound, func() bool {
		for _, n := range t.C.Names {
			st, err := t.C.Nodes[n].Status()
			if err != nil {
				why = err.Error()
				return false
			}
			r := st.Services[svc].Rollout
			switch {
			case r == nil:
				why = n + " holds no rollout of " + svc
				return false
			case r.ID != last && !newerID(r.ID, last):
				why = fmt.Sprintf("%s holds rollout %s of %s, older than the last accepted %s", n, r.ID, svc, last)
				return false
			case !r.Ended():
				why = fmt.Sprintf("%s sees rollout %s of %s %s: %s", n, r.ID, svc, r.State, r.Summary)
				return false
			}
			states[n] = r.ID + " " + r.State + ": " + r.Summary
		}
		return true
	}, "")
	if err != nil {
		return fmt.Errorf("rollout not ended %s after the faults: %s", rolloutEndBound, why)
	}
	t.Note("the last rollout ended %s after the faults: %s", time.Since(from).Round(100*time.Millisecond), states[t.C.Names[0]])
	return nil
}

// newerID: rollout id a (ORIGIN-COUNTER, node.beginRollout) is of a
// newer version than b.
func newerID(a, b string) bool {
	version := func(id string) (dataset.Version, bool) {
		i := strings.LastIndex(id, "-")
		if i <= 0 {
			return dataset.Version{}, false
		}
		n, err := strconv.ParseUint(id[i+1:], 10, 64)
		return dataset.Version{Counter: n, Origin: id[:i]}, err == nil
	}
	va, oka := version(a)
	vb, okb := version(b)
	return oka && okb && va.Newer(vb)
}
