package resource

import (
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"haven/dataset"

	"golang.org/x/sys/unix"
)

// The status of an ip resource is read through rtnetlink (devAddr): the
// address with the prefix length it has on the device (not the resource's
// netmask), IPv4 and IPv6, absent, on another device of the host.
func TestIPPresentNetlink(t *testing.T) {
	a, _ := twoHosts(t)
	// a second device in a, its addresses not on va
	sh(t, "ip", "-n", a, "link", "add", "vc", "type", "veth", "peer", "name", "vd")
	sh(t, "ip", "-n", a, "addr", "add", "198.18.79.1/26", "dev", "vc")
	sh(t, "ip", "-n", a, "addr", "add", "fd00:79::1/80", "dev", "vc", "nodad")
	tests := []struct {
		name, addr, dev string
		present         bool
		prefix          string
	}{
		{"v4 with its own prefix length", "198.18.77.1", "va", true, "198.18.77.1/24"},
		{"v6 with its own prefix length", "fd00:77::1", "va", true, "fd00:77::1/64"},
		{"v4 absent", "198.18.77.9", "va", false, ""},
		{"v6 absent", "fd00:77::9", "va", false, ""},
		{"v4 of the other device", "198.18.79.1", "va", false, ""},
		{"v6 of the other device", "fd00:79::1", "va", false, ""},
		{"v4 on the other device", "198.18.79.1", "vc", true, "198.18.79.1/26"},
		{"v6 on the other device", "fd00:79::1", "vc", true, "fd00:79::1/80"},
		{"v4 of a device on another", "198.18.77.1", "vc", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// the resource's netmask (32 or 128) is not what is reported
			h := inNS(t, a, ipRC(tt.addr, "", tt.dev), "present")[0]
			want := dataset.StatusDown
			if tt.present {
				want = dataset.StatusUp
			}
			if h.Err != "" || h.NoDevice || h.Present != tt.present || h.Prefix != tt.prefix || h.Status != want {
				t.Errorf("present %s on %s = %+v, want present %v, prefix %q, status %s", tt.addr, tt.dev, h, tt.present, tt.prefix, want)
			}
		})
	}
}

// A device that does not exist is errNoDevice (status down, naming it),
// for IPv4 and IPv6, and for a name longer than any device's.
func TestIPPresentNoDevice(t *testing.T) {
	a, _ := twoHosts(t)
	for _, rc := range []struct{ addr, dev string }{
		{"198.18.77.1", "nosuchdev"},
		{"fd00:77::1", "nosuchdev"},
		{"198.18.77.1", "averyveryverylongname"},
	} {
		h := inNS(t, a, ipRC(rc.addr, "24", rc.dev), "present")[0]
		if !h.NoDevice || h.Present || h.Status != dataset.StatusDown || !strings.Contains(h.Reason, rc.dev) || !strings.Contains(h.Reason, "no such device") {
			t.Errorf("present %s on %s = %+v, want errNoDevice and down naming the device", rc.addr, rc.dev, h)
		}
	}
}

// An IPv6 address whose duplicate address detection is under way is
// tentative (status up), one whose detection found another holder is
// dadfailed (status warn). Flags beyond the 8 bits of ifa_flags come from
// the IFA_FLAGS attribute (noprefixroute).
func TestIPPresentDADFlags(t *testing.T) {
	a, _ := twoHosts(t)
	// fd00:77::2 is b's (nodad): added on va with DAD, va's probe is answered
	sh(t, "ip", "-n", a, "addr", "add", "fd00:77::2/64", "dev", "va")
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := exec.Command("ip", "-n", a, "-o", "addr", "show", "dev", "va").Output()
		if strings.Contains(string(out), "fd00:77::2/64") && strings.Contains(string(out), "dadfailed") {
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("the kernel of the namespace did not mark fd00:77::2 dadfailed within 10s (accept_dad 0?):\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h := inNS(t, a, ipRC("fd00:77::2", "64", "va"), "present")[0]
	if !h.Present || h.Flags&unix.IFA_F_DADFAILED == 0 || h.Status != dataset.StatusWarn || !strings.Contains(h.Reason, "duplicate address") {
		t.Errorf("present fd00:77::2 (DAD failed) = %+v, want present, dadfailed, and warn", h)
	}

	// a detection of 60 probes (a second apart) stays under way for the test
	sh(t, "ip", "netns", "exec", a, "sh", "-c", "echo 60 > /proc/sys/net/ipv6/conf/va/dad_transmits")
	sh(t, "ip", "-n", a, "addr", "add", "fd00:77::3/64", "dev", "va")
	if out := sh(t, "ip", "-n", a, "-o", "addr", "show", "dev", "va"); !strings.Contains(out, "fd00:77::3/64 scope global tentative") {
		t.Skipf("the kernel of the namespace does not show fd00:77::3 tentative:\n%s", out)
	}
	h = inNS(t, a, ipRC("fd00:77::3", "64", "va"), "present")[0]
	if !h.Present || h.Flags&unix.IFA_F_TENTATIVE == 0 || h.Flags&unix.IFA_F_DADFAILED != 0 || h.Status != dataset.StatusUp {
		t.Errorf("present fd00:77::3 (DAD under way) = %+v, want present, tentative, not dadfailed, and up", h)
	}
	// and with nodad: neither
	h = inNS(t, a, ipRC("fd00:77::1", "64", "va"), "present")[0]
	if !h.Present || h.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 || h.Flags&unix.IFA_F_NODAD == 0 {
		t.Errorf("present fd00:77::1 (nodad) = %+v, want present, nodad, neither tentative nor dadfailed", h)
	}
	sh(t, "ip", "-n", a, "addr", "add", "fd00:77::4/64", "dev", "va", "nodad", "noprefixroute")
	h = inNS(t, a, ipRC("fd00:77::4", "64", "va"), "present")[0]
	if !h.Present || h.Flags&unix.IFA_F_NOPREFIXROUTE == 0 || h.Status != dataset.StatusUp {
		t.Errorf("present fd00:77::4 (noprefixroute) = %+v, want present, noprefixroute (IFA_FLAGS), and up", h)
	}
}

// A check whose context is done asks nothing; lo's 127.0.0.1/8 is read as
// it is (any host, no namespace).
func TestIPPresentContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, _, _, err := devAddr(ctx, "lo", netip.MustParseAddr("127.0.0.1"), time.Second); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("devAddr with a cancelled context = %v, %v; want not present and context.Canceled", ok, err)
	}
	ok, pfx, _, err := devAddr(context.Background(), "lo", netip.MustParseAddr("127.0.0.1"), time.Second)
	if !ok || pfx.String() != "127.0.0.1/8" || err != nil {
		t.Errorf("devAddr 127.0.0.1 on lo = %v, %s, %v; want present as 127.0.0.1/8", ok, pfx, err)
	}
}
