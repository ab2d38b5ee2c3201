package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

func TestParseNetmask(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")
	tests := []struct {
		in      string
		addr    netip.Addr
		want    int
		wantErr bool
	}{
		{"", v4, 32, false},
		{"", v6, 128, false},
		{"24", v4, 24, false},
		{"0", v4, 0, false},
		{"64", v6, 64, false},
		{"255.255.255.0", v4, 24, false},
		{"255.255.252.0", v4, 22, false},
		{"255.255.255.255", v4, 32, false},
		{"33", v4, 0, true},
		{"129", v6, 0, true},
		{"-1", v4, 0, true},
		{"255.0.255.0", v4, 0, true},
		{"255.255.255.0", v6, 0, true},
		{"ffff::", v6, 0, true},
		{"abc", v4, 0, true},
	}
	for _, tt := range tests {
		got, err := parseNetmask(tt.in, tt.addr)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseNetmask(%q, %s) = %d, nil; want an error", tt.in, tt.addr, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseNetmask(%q, %s) = %d, %v; want %d", tt.in, tt.addr, got, err, tt.want)
		}
	}
}

func TestIPLabel(t *testing.T) {
	d, err := New(config.ResourceConfig{RID: "ip#vip", Type: "ip", IPName: "192.168.10.50", IPDev: "eth0", Netmask: "255.255.255.0"}, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Label(), "192.168.10.50/24@eth0"; got != want {
		t.Errorf("Label() = %q, want %q", got, want)
	}
}

// The ip driver is tested for real inside network namespaces: the test
// binary re-executes itself under `ip netns exec NS`, running only
// TestIPHelper, which drives one action and prints its outcome.

const helperEnv = "HAVEN_IP_HELPER" // JSON of helperReq

type helperReq struct {
	Actions []string // start | stop | status | present | settle (wait for the announcements to end) | prepare | early DUR | unprepare-early | sleep DUR | touch PATH, run in turn
	RC      config.ResourceConfig
}

// helperOut is the outcome of one action: its error, the status after it,
// its log lines, and what `ip -o addr show dev` says then.
type helperOut struct {
	Status dataset.Status
	Reason string
	Err    string
	Log    []string
	Shown  string
	Took   time.Duration // of the action alone
	// what present answered (the present action only)
	Present  bool
	Prefix   string
	Flags    uint32
	NoDevice bool // its error is errNoDevice
}

const helperMark = "HAVEN-HELPER-OUT "

func TestIPHelper(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper of the ip tests, run by them inside a network namespace")
	}
	var req helperReq
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	var outs []helperOut
	var lines []string
	d, err := New(req.RC, Env{Service: "s", Node: "n", Log: func(_, l string) { lines = append(lines, l) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, action := range req.Actions {
		lines = nil
		var out helperOut
		t0 := time.Now()
		switch action {
		case "start":
			err = d.Start(ctx)
		case "stop":
			err = d.Stop(ctx)
		case "announce":
			err = d.(Announcer).Announce(ctx)
		case "present":
			var pfx netip.Prefix
			out.Present, pfx, out.Flags, err = d.(*ipAddr).present(ctx)
			out.NoDevice = errors.Is(err, errNoDevice)
			if pfx.IsValid() {
				out.Prefix = pfx.String()
			}
		case "prepare":
			d.(Preparer).Prepare(ctx)
		case "unprepare-early":
			d.(Preparer).UnprepareEarly()
		case "await-early-holder": // the early probe heard a holder
			ip := d.(*ipAddr)
			helperAwait(t, "the early probe to hear a holder", func() bool {
				ip.mu.Lock()
				defer ip.mu.Unlock()
				return ip.watch != nil && ip.watch.ended() && ip.watch.holder != ""
			})
		case "settle":
			ip := d.(*ipAddr)
			ip.mu.Lock()
			a := ip.ann
			ip.mu.Unlock()
			a.wait()
			err = nil
		default:
			if path, ok := strings.CutPrefix(action, "touch "); ok {
				if werr := os.WriteFile(path, nil, 0o600); werr != nil {
					t.Fatal(werr)
				}
			}
			if path, ok := strings.CutPrefix(action, "await-file "); ok { // the test's go-ahead
				helperAwait(t, path, func() bool { _, err := os.Stat(path); return err == nil })
			}
			if dur, ok := strings.CutPrefix(action, "early "); ok { // PrepareEarly within dur
				dt, perr := time.ParseDuration(dur)
				if perr != nil {
					t.Fatal(perr)
				}
				d.(Preparer).PrepareEarly(ctx, dt)
			}
			if dur, ok := strings.CutPrefix(action, "sleep "); ok {
				dt, perr := time.ParseDuration(dur)
				if perr != nil {
					t.Fatal(perr)
				}
				time.Sleep(dt)
			}
			err = nil
		}
		out.Took = time.Since(t0)
		if err != nil {
			out.Err = err.Error()
		}
		out.Status, out.Reason = d.Status(ctx)
		out.Log = lines
		shown, _ := exec.Command("ip", "-o", "addr", "show", "dev", req.RC.IPDev).Output()
		out.Shown = string(shown)
		outs = append(outs, out)
	}
	b, _ := json.Marshal(outs)
	fmt.Println(helperMark + string(b))
}

// helperAwait polls cond (inside the helper process) for 10 s at most.
func helperAwait(t *testing.T, what string, cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("helper: waited 10s for %s", what)
		}
	}
}

var nsSeq atomic.Int32

// netns creates a network namespace removed at the end of the test.
func netns(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("havtest-%d-%d", os.Getpid(), nsSeq.Add(1))
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNS runs driver actions in turn inside ns (one process) and returns
// their outcomes.
func inNS(t *testing.T, ns string, rc config.ResourceConfig, actions ...string) []helperOut {
	t.Helper()
	req, _ := json.Marshal(helperReq{Actions: actions, RC: rc})
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestIPHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(req))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper %s in %s: %v\n%s", actions, ns, err, out)
	}
	for _, line := range bytes.Split(out, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte(helperMark)); ok {
			var h []helperOut
			if err := json.Unmarshal(rest, &h); err != nil {
				t.Fatal(err)
			}
			if len(h) != len(actions) {
				t.Fatalf("helper returned %d outcomes for %d actions", len(h), len(actions))
			}
			return h
		}
	}
	t.Fatalf("helper %s in %s printed no outcome:\n%s", actions, ns, out)
	return nil
}

// twoHosts returns two namespaces joined by a veth pair: va in a
// (198.18.77.1/24, fd00:77::1/64), vb in b (198.18.77.2/24, fd00:77::2/64).
func twoHosts(t *testing.T) (a, b string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("ip driver tests need root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip driver tests need iproute2 (ip)")
	}
	a, b = netns(t), netns(t)
	sh(t, "ip", "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b)
	for _, c := range [][]string{
		{"-n", a, "addr", "add", "198.18.77.1/24", "dev", "va"},
		{"-n", a, "addr", "add", "fd00:77::1/64", "dev", "va", "nodad"},
		{"-n", a, "link", "set", "va", "up"},
		{"-n", a, "link", "set", "lo", "up"},
		{"-n", b, "addr", "add", "198.18.77.2/24", "dev", "vb"},
		{"-n", b, "addr", "add", "fd00:77::2/64", "dev", "vb", "nodad"},
		{"-n", b, "link", "set", "vb", "up"},
		{"-n", b, "link", "set", "lo", "up"},
	} {
		sh(t, append([]string{"ip"}, c...)...)
	}
	// IPv6 link-local addresses go through duplicate address detection when
	// the link comes up: probes sent before it ends may get no answer.
	for _, ns := range []string{a, b} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			out, _ := exec.Command("ip", "-n", ns, "-6", "addr", "show", "tentative").Output()
			if len(strings.TrimSpace(string(out))) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("IPv6 addresses of %s still tentative after 5s:\n%s", ns, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return a, b
}

func ipRC(addr, mask, dev string) config.ResourceConfig {
	return config.ResourceConfig{RID: "ip#vip", Type: "ip", Name: "vip", IPName: addr, Netmask: mask, IPDev: dev}
}

func TestIPStartStatusStop(t *testing.T) {
	a, _ := twoHosts(t)
	tests := []struct {
		name, addr, mask, shown string
	}{
		{"v4 prefix", "198.18.77.50", "24", "198.18.77.50/24"},
		{"v4 dotted mask", "198.18.77.51", "255.255.255.0", "198.18.77.51/24"},
		{"v4 host", "198.18.77.52", "", "198.18.77.52/32"},
		{"v6", "fd00:77::50", "64", "fd00:77::50/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := inNS(t, a, ipRC(tt.addr, tt.mask, "va"), "status", "start", "start", "stop", "stop")
			if h[0].Status != dataset.StatusDown {
				t.Errorf("status before start = %+v, want down", h[0])
			}
			if h[1].Err != "" || h[1].Status != dataset.StatusUp {
				t.Errorf("start = %+v, want no error and up", h[1])
			}
			if !strings.Contains(h[1].Shown, " "+tt.shown+" ") {
				t.Errorf("ip addr show dev va after start:\n%s\nwant it to hold %s", h[1].Shown, tt.shown)
			}
			if log := strings.Join(h[1].Log, "\n"); strings.Contains(log, "cannot check") || strings.Contains(log, "announce") {
				t.Errorf("start log:\n%s\nwant a probe and an announce without trouble", log)
			}
			// the probe of a free address waits probe_timeout (300ms),
			// not the fixed second it used to
			if h[1].Took >= time.Second {
				t.Errorf("start took %s, want the 300ms probe and three ip commands", h[1].Took)
			}
			if h[2].Err != "" || h[2].Status != dataset.StatusUp || !strings.Contains(strings.Join(h[2].Log, "\n"), "already up") {
				t.Errorf("second start = %+v, want no error, up, and an already up line", h[2])
			}
			if h[3].Err != "" || h[3].Status != dataset.StatusDown || strings.Contains(h[3].Shown, tt.addr+"/") {
				t.Errorf("stop = %+v, want no error, down, and the address gone", h[3])
			}
			if h[4].Err != "" || h[4].Status != dataset.StatusDown {
				t.Errorf("second stop = %+v, want no error and down", h[4])
			}
		})
	}
}

func TestIPMissingDevice(t *testing.T) {
	a, _ := twoHosts(t)
	h := inNS(t, a, ipRC("198.18.77.50", "24", "nosuchdev"), "status", "stop", "start")
	if h[0].Status != dataset.StatusDown || !strings.Contains(h[0].Reason, "nosuchdev") {
		t.Errorf("status = %+v, want down with a reason naming the device", h[0])
	}
	if h[1].Err != "" {
		t.Errorf("stop = %+v, want no error", h[1])
	}
	if h[2].Err == "" || !strings.Contains(h[2].Err, "ip#vip") {
		t.Errorf("start = %+v, want an error naming ip#vip", h[2])
	}
}

// Start refuses an address another host of the link already holds.
func TestIPAnswersElsewhere(t *testing.T) {
	a, b := twoHosts(t)
	tests := []struct {
		name, addr, mask, holder string
	}{
		{"v4 arp probe", "198.18.77.60", "24", "is-at "},
		{"v6 echo probe", "fd00:77::60", "64", "answers ICMP echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh(t, "ip", "-n", b, "addr", "add", tt.addr+"/"+tt.mask, "dev", "vb", "nodad")
			rc := ipRC(tt.addr, tt.mask, "va")
			rc.ProbeTimeout = 5 * time.Second
			h := inNS(t, a, rc, "start")[0]
			if !strings.Contains(h.Err, "already answers") || !strings.Contains(h.Err, tt.holder) || h.Status != dataset.StatusDown {
				t.Errorf("start = %+v, want a refusal (%q) and down", h, tt.holder)
			}
			// the first answer ends the wait
			if h.Took >= 2*time.Second {
				t.Errorf("refusal after %s, want it at the first answer, well before probe_timeout 5s", h.Took)
			}
		})
	}
}

// When no probe is possible (here: the device is down, so neither ARP nor
// a routed echo can go out) start logs it and proceeds.
func TestIPNoProbePossible(t *testing.T) {
	a, _ := twoHosts(t)
	sh(t, "ip", "-n", a, "link", "add", "vc", "type", "veth", "peer", "name", "vd")
	h := inNS(t, a, ipRC("198.18.78.5", "24", "vc"), "start")[0]
	if h.Err != "" || h.Status != dataset.StatusUp || !strings.Contains(strings.Join(h.Log, "\n"), "cannot check whether 198.18.78.5 is in use elsewhere") {
		t.Errorf("start = %+v, want no error, up, and a cannot check line", h)
	}
}

// The ready window: the probe runs in the background from Prepare on (the
// window began); a start after a window at least probe_timeout long does
// not probe again, one after a shorter window waits only the rest.
func TestIPStartAfterPreparedWindow(t *testing.T) {
	a, _ := twoHosts(t)
	rc := ipRC("198.18.77.70", "24", "va")
	rc.ProbeTimeout = 3 * time.Second
	h := inNS(t, a, rc, "prepare", "sleep 3100ms", "start")
	if h[2].Err != "" || h[2].Status != dataset.StatusUp {
		t.Fatalf("start = %+v, want no error and up", h[2])
	}
	if log := strings.Join(h[2].Log, "\n"); !strings.Contains(log, "no answer for 198.18.77.70 since the ready window began") {
		t.Errorf("start log:\n%s\nwant the answer of the probe of the window", log)
	}
	// three ip commands and an announce, not probe_timeout (3s) again
	if h[2].Took >= 1500*time.Millisecond {
		t.Errorf("start after a window of probe_timeout took %s, want no second probe", h[2].Took)
	}

	// a window of 1s of a 3s probe_timeout: the start waits the other 2s
	rc.IPName = "198.18.77.71"
	h = inNS(t, a, rc, "prepare", "sleep 1s", "start")
	if h[2].Err != "" || h[2].Status != dataset.StatusUp {
		t.Fatalf("start = %+v, want no error and up", h[2])
	}
	if h[2].Took < 1800*time.Millisecond || h[2].Took >= 2900*time.Millisecond {
		t.Errorf("start after a 1s window took %s, want the rest of probe_timeout (about 2s)", h[2].Took)
	}
}

// A holder that answers during the window makes the start refuse, even
// when it lets the address go before the start: someone else may hold it.
func TestIPHolderDuringWindowRefuses(t *testing.T) {
	a, b := twoHosts(t)
	const addr = "198.18.77.72"
	rc := ipRC(addr, "24", "va")
	mark := filepath.Join(t.TempDir(), "window")
	done := make(chan []helperOut)
	go func() { done <- inNS(t, a, rc, "prepare", "touch "+mark, "sleep 3s", "start") }()
	eventually(t, 10*time.Second, "the window began", func() bool { _, err := os.Stat(mark); return err == nil })
	sh(t, "ip", "-n", b, "addr", "add", addr+"/24", "dev", "vb")
	time.Sleep(400 * time.Millisecond) // a few probes of the window, each answered
	sh(t, "ip", "-n", b, "addr", "del", addr+"/24", "dev", "vb")
	h := <-done
	if !strings.Contains(h[3].Err, "already answers") || h[3].Status != dataset.StatusDown {
		t.Errorf("start = %+v, want a refusal: a host answered for %s during the window", h[3], addr)
	}
}
