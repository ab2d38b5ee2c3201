package render

import (
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
	"haven/placement"
)

// hostile is a peer's free text that would clear the screen, retitle the
// window and move the cursor up if printed raw.
const hostile = "maint\x1b[2J\x1b]0;owned\x07\x1b[1Aok"

// noRawESC fails when out holds the hostile text's escapes (the views'
// own colours are ANSI SGR codes, checked apart).
func noRawESC(t *testing.T, view, out string) {
	t.Helper()
	for _, seq := range []string{"\x1b[2J", "\x1b]0;", "\x07", "\x1b[1A"} {
		if strings.Contains(out, seq) {
			t.Errorf("%s prints a peer's %q raw:\n%q", view, seq, out)
		}
	}
	if !strings.Contains(out, `maint\x1b[2J\x1b]0;owned\x07\x1b[1Aok`) {
		t.Errorf("%s does not show the peer's text, escaped:\n%s", view, out)
	}
}

// Peers' free text (a frozen reason, a resource label,
// a message) reaches the terminal with its control characters made
// visible, in every view, with colours on or off.
func TestViewsMakePeersControlCharactersVisible(t *testing.T) {
	for _, color := range []bool{false, true} {
		st := cases()["one_node"]
		n1 := st.Nodes["n1"]
		n1.Frozen, n1.FrozenReason = true, hostile
		st.Nodes["n1"] = n1
		web := st.Services["web"]
		i := web.Instances["n1"]
		r := i.Resources["app#web"]
		r.Label, r.Log = hostile, hostile
		i.Resources["app#web"] = r
		web.ConfigError = hostile
		st.Services["web"] = web
		noRawESC(t, "svcmon", Svcmon(st, SvcmonOptions{Color: color}))
		noRawESC(t, "print status", StatusTree("web", st.Services["web"], "n1"))
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &api.Explanation{Service: "web", Local: "n1", Now: now, Orchestrate: "ha", Policy: "nodes order",
		Verdicts: []placement.Verdict{{Node: "n2", Reasons: []string{hostile}}},
		Monitor:  &monitor.LocalMonitor{State: dataset.Idle, Since: now, Reason: hostile}}
	noRawESC(t, "explain", Explain(e))
	noRawESC(t, "ls", ServiceList([]api.ServiceEntry{{Name: "web", ConfigError: hostile}}))
	noRawESC(t, "daemon status", NodeStatus(&api.DaemonStatus{Node: "n1", Started: now,
		Peers: []api.PeerStatus{{Name: "n2", Addr: hostile, Status: "up"}}}, now))
}
