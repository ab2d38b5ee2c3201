package chaos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The quorum mode of a round (Config.Quorum, `chaos -quorum`, `make chaos
// QUORUM=`): every test on, every test off, or mixed (the default), where
// the daemons' cluster.quorum changes between tests as they ask:
//
//   - the split tests (SplitBrain, OneWayLoss, PauseActive) draw quorum on
//     or off at random (a coin of the test's own source), since each has a
//     promise for both;
//   - NearQuorumPoint needs it on (it checks the vote);
//   - every other test runs in the mode the cluster is in, so that over a
//     round each of them runs both ways.
//
// A change rewrites every node's cluster.toml and restarts the daemons
// (a clean stop of all, then a start of all: nothing moves, Reattach's
// promise; the audits check it), before the test and outside its recovery
// time. The sequence of a round names the
// tests run with quorum on with the suffix /q (SplitBrain/q): a replay
// (TESTS=) runs each entry in the mode it names, so it is exact.
const (
	QuorumMixed = "mixed"
	QuorumOn    = "on"
	QuorumOff   = "off"
)

// quorumUse is what a test asks of the quorum mode in a mixed round.
type quorumUse int

const (
	quorumAny  quorumUse = iota // the mode the cluster is in
	quorumDraw                  // on or off at random
	quorumNeed                  // on
)

var quorumUses = map[string]quorumUse{
	"SplitBrain":      quorumDraw,
	"Flap":            quorumDraw,
	"Rollout":         quorumDraw,
	"OneWayLoss":      quorumDraw,
	"PauseActive":     quorumDraw,
	"DaemonLoss":      quorumDraw,
	"NearQuorumPoint": quorumNeed,
	"LinkFail":        quorumDraw, // with quorum on, no vote either
}

// entry is one test of a sequence: its name and whether it runs with
// quorum on ("Name/q").
func parseEntry(s string) (name string, quorum bool) {
	name, q := strings.CutSuffix(s, "/q")
	return name, q
}

func entry(name string, quorum bool) string {
	if quorum {
		return name + "/q"
	}
	return name
}

// checkMode says why a named test (Name/q when quorum) cannot run in the
// round's mode ("" when it can).
func checkMode(mode, name string, quorum bool) string {
	switch {
	case mode == QuorumOff && quorumUses[name] == quorumNeed:
		return name + " needs quorum on; the round has -quorum off"
	case mode == QuorumOff && quorum:
		return entry(name, true) + " asks for quorum on; the round has -quorum off"
	}
	return ""
}

// wantQuorum is the mode a randomly picked test runs in; coin is the
// draw of a test that draws it.
func wantQuorum(mode, name string, current, coin bool) bool {
	switch mode {
	case QuorumOn:
		return true
	case QuorumOff:
		return false
	}
	switch quorumUses[name] {
	case quorumNeed:
		return true
	case quorumDraw:
		return coin
	}
	return current
}

// Quorum reports whether the daemons run with cluster.quorum on.
func (c *Cluster) Quorum() bool { return c.quorum }

// SetQuorum writes cluster.quorum = on into every node's cluster.toml,
// stops every daemon cleanly at once and starts them again at once (the
// services keep running: Reattach's promise), then waits for a stable
// cluster.
func (c *Cluster) SetQuorum(on bool) error {
	if on == c.quorum {
		return nil
	}
	for _, n := range c.Names {
		if err := writeFile(filepath.Join(c.Nodes[n].Root, "etc", "cluster.toml"), c.clusterToml(on), 0o600); err != nil {
			return err
		}
	}
	c.quorum = on
	from := c.journalLines()
	if err := c.each(c.Names, true, (*Node).StopDaemon); err != nil {
		return err
	}
	if err := c.each(c.Names, true, (*Node).StartDaemon); err != nil {
		return err
	}
	if _, err := c.waitStable(recoveryBound); err != nil {
		return fmt.Errorf("after the restart with quorum = %v: %w", on, err)
	}
	if n := c.journalLines(); n != from {
		return fmt.Errorf("clean daemon restarts (quorum = %v) started or stopped a service: journal lines %d to %d", on, from+1, n)
	}
	return nil
}

// nodeActions returns the node actions (crash_command, reboot_command)
// recorded since the previous call: with split_action = stop none may
// run unless a split stop outlasts its deadline.
func (c *Cluster) nodeActions() []string {
	b, err := readFileIfAny(c.NodeActions())
	if err != nil {
		return []string{err.Error()}
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(b) == 0 {
		lines = nil
	}
	if len(lines) <= c.actionsSeen {
		return nil
	}
	out := lines[c.actionsSeen:]
	c.actionsSeen = len(lines)
	return out
}

// sinceBoot converts a time of the journal (CLOCK_BOOTTIME seconds) into
// the wall clock.
func sinceBoot(boot float64) time.Time {
	now := time.Now()
	return now.Add(-time.Duration((bootNow() - boot) * float64(time.Second)))
}

// bootNow is CLOCK_BOOTTIME in seconds, the journal's clock.
func bootNow() float64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return float64(ts.Nano()) / 1e9
}

// readFileIfAny reads path; a missing file reads empty.
func readFileIfAny(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
