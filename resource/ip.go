package resource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"haven/config"
	"haven/dataset"

	"golang.org/x/sys/unix"
)

// ipAddr holds an address on a device with iproute2 (`ip addr add|del`);
// its status is read through rtnetlink (present).
type ipAddr struct {
	rid     string
	env     Env
	addr    netip.Addr
	bits    int
	dev     string
	timeout time.Duration
	// probe is how long Start waits for a holder of the address to answer
	// (probe_timeout).
	probe time.Duration

	mu  sync.Mutex
	ann *announcer // the announcements of the last start, nil when none
	// watch is the probe running since the ready window began (Prepare),
	// nil when none: the next Start takes it.
	watch *addrWatch
}

// errNoDevice is returned by present when the device does not exist.
var errNoDevice = errors.New("no such device")

func newIP(rc config.ResourceConfig, env Env) (*ipAddr, error) {
	if rc.IPName == "" {
		return nil, fmt.Errorf("%s: ipname is required", rc.RID)
	}
	if rc.IPDev == "" {
		return nil, fmt.Errorf("%s: ipdev is required", rc.RID)
	}
	addr, err := netip.ParseAddr(rc.IPName)
	if err != nil {
		return nil, fmt.Errorf("%s: ipname %q is not an IP address", rc.RID, rc.IPName)
	}
	addr = addr.Unmap()
	if addr.Zone() != "" {
		return nil, fmt.Errorf("%s: ipname %q: no zone allowed (ipdev names the device)", rc.RID, rc.IPName)
	}
	bits, err := parseNetmask(rc.Netmask, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: netmask: %w", rc.RID, err)
	}
	probe := rc.ProbeTimeout
	if probe <= 0 {
		probe = DefaultProbeTimeout
	}
	return &ipAddr{rid: rc.RID, env: env, addr: addr, bits: bits, dev: rc.IPDev, timeout: timeoutOf(rc), probe: probe}, nil
}

// parseNetmask reads a prefix length ("24") or, for IPv4, a dotted mask
// ("255.255.255.0"). Empty means a host address: 32 or 128.
func parseNetmask(s string, addr netip.Addr) (int, error) {
	max := addr.BitLen()
	if s == "" {
		return max, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > max {
			return 0, fmt.Errorf("prefix length %d out of range 0-%d", n, max)
		}
		return n, nil
	}
	m, err := netip.ParseAddr(s)
	if err != nil || !m.Is4() {
		return 0, fmt.Errorf("%q is neither a prefix length nor a dotted mask", s)
	}
	if !addr.Is4() {
		return 0, fmt.Errorf("dotted mask %q for an IPv6 address", s)
	}
	b := m.As4()
	ones, total := net.IPMask(b[:]).Size()
	if total == 0 {
		return 0, fmt.Errorf("%q is not a contiguous mask", s)
	}
	return ones, nil
}

func (p *ipAddr) RID() string { return p.rid }

// Label is "ADDR/BITS@DEV", e.g. "192.168.10.50/24@eth0".
func (p *ipAddr) Label() string { return fmt.Sprintf("%s/%d@%s", p.addr, p.bits, p.dev) }

func (p *ipAddr) prefix() string { return fmt.Sprintf("%s/%d", p.addr, p.bits) }

// ipCmd runs the ip command with the resource's timeout and returns its
// combined output.
func (p *ipAddr) ipCmd(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return out, fmt.Errorf("ip %s: %s", strings.Join(args, " "), msg)
	}
	return out, nil
}

// present reports whether the address is on the device, and with what
// prefix and IFA_F_* flags (unix.IFA_F_DADFAILED, IFA_F_TENTATIVE, ...) it
// is there: read from the kernel through rtnetlink (devAddr), no command
// run. A device that does not exist gives errNoDevice.
func (p *ipAddr) present(ctx context.Context) (bool, netip.Prefix, uint32, error) {
	return devAddr(ctx, p.dev, p.addr, p.timeout)
}

// Status is up when the address is on the device, down when it is not or
// when the device does not exist, warn when the kernel cannot be asked or
// found the address duplicated (IPv6 DAD: dadfailed).
func (p *ipAddr) Status(ctx context.Context) (dataset.Status, string) {
	ok, _, flags, err := p.present(ctx)
	switch {
	case errors.Is(err, errNoDevice):
		return dataset.StatusDown, err.Error()
	case err != nil:
		return dataset.StatusWarn, err.Error()
	case !ok:
		return dataset.StatusDown, ""
	}
	if flags&unix.IFA_F_DADFAILED != 0 {
		return dataset.StatusWarn, "duplicate address detected by the kernel"
	}
	return dataset.StatusUp, ""
}

// Start adds the address unless it is already there (then it announces
// it only: the instance starts here). Before adding it, it
// probes the network for probe_timeout (see probeAddr) and refuses when
// another host answers for the address; when the probe has run in the
// background since the ready window began (Prepare), the start uses its
// answer and waits only for what is left of probe_timeout, if anything
// (probeBeforeStart). After adding it, it announces it
// (gratuitous ARPs for IPv4, unsolicited neighbour advertisements for
// IPv6: see announce) so that neighbours update their caches after a
// failover.
func (p *ipAddr) Start(ctx context.Context) error {
	w := p.takeWatch()
	defer w.stop()
	ok, _, _, err := p.present(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	if ok {
		p.env.Log(p.rid, p.Label()+" is already up")
		p.announce() // started here: the network must know where it is
		return nil
	}
	holder, err := p.probeBeforeStart(ctx, w)
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%s: %w", p.rid, ctx.Err())
	case err != nil:
		p.env.Log(p.rid, fmt.Sprintf("cannot check whether %s is in use elsewhere (%v): proceeding", p.addr, err))
	case holder != "":
		return fmt.Errorf("%s: %s already answers on the network (%s): refusing to start", p.rid, p.addr, holder)
	}
	p.env.Log(p.rid, "ip addr add "+p.prefix()+" dev "+p.dev)
	if _, err := p.ipCmd(ctx, "addr", "add", p.prefix(), "dev", p.dev); err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	p.announce()
	return nil
}

// Announce announces the address again when the device holds it (the
// instance was left alone running after a split, or was started again
// with the address already there): a new burst, in place of the
// announcements of the last start if they still run.
func (p *ipAddr) Announce(ctx context.Context) error {
	ok, _, _, err := p.present(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	if ok {
		p.env.Log(p.rid, "announce "+p.addr.String()+" on "+p.dev+" again")
		p.announce()
	}
	return nil
}

// announce sends the announcements of the address (announce.go), in
// place of those of the last start; a failure is logged.
func (p *ipAddr) announce() {
	log := func(line string) { p.env.Log(p.rid, line) }
	ann, err := announce(p.dev, p.addr, log)
	if err != nil {
		log("announce " + p.addr.String() + " on " + p.dev + ": " + err.Error())
	}
	p.mu.Lock()
	old := p.ann
	p.ann = ann
	p.mu.Unlock()
	old.stop()
}

// Prepare starts probing the address in the background (the ready window
// began): the start that may follow takes the answer (Preparer). A probe
// begun early (PrepareEarly) is the window's when it is still good
// (addrWatch.takeEarly), else a new one begins.
func (p *ipAddr) Prepare(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch != nil && p.watch.takeEarly() {
		return
	}
	p.watch.stop()
	p.watch = watchAddr(ctx, p.dev, p.addr)
}

// Unprepare stops the probe in the background, if any (the window ended
// without a start).
func (p *ipAddr) Unprepare() { p.takeWatch().stop() }

// PrepareEarly starts probing the address in the background before the
// ready window: the node running the service fell silent, and may be
// declared down within hb.timeout (within). The probe ends by itself
// within + probe_timeout later unless a window took it (addrWatch). A
// probe already running (early or the window's) goes on.
func (p *ipAddr) PrepareEarly(ctx context.Context, within time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watch != nil && !(p.watch.untaken() && p.watch.ended()) {
		return
	}
	p.watch.stop()
	p.watch = watchEarly(ctx, p.dev, p.addr, within+p.probe)
}

// UnprepareEarly stops a probe begun early that no window took (the
// silent node was heard again).
func (p *ipAddr) UnprepareEarly() {
	p.mu.Lock()
	var w *addrWatch
	if p.watch != nil && p.watch.untaken() {
		w, p.watch = p.watch, nil
	}
	p.mu.Unlock()
	w.stop()
}

func (p *ipAddr) takeWatch() *addrWatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.watch
	p.watch = nil
	return w
}

// probeBeforeStart is the duplicate-address probe of a start: the answer of
// w, the probe running since the ready window began (or since the node
// running the service fell silent, when the window took that probe), when
// it can tell (a holder that answered at any time of the window, or none
// for probe_timeout up to now); else a probe of probe_timeout now.
func (p *ipAddr) probeBeforeStart(ctx context.Context, w *addrWatch) (string, error) {
	if w != nil {
		if holder, err, ok := w.result(ctx, p.probe); ok {
			if holder == "" && err == nil {
				p.env.Log(p.rid, fmt.Sprintf("no answer for %s since %s %s ago", p.addr, w.began(), time.Since(w.since).Round(time.Millisecond)))
			}
			return holder, err
		}
	}
	return probeAddr(ctx, p.dev, p.addr, p.probe)
}

// stopAnnounce ends the announcements of the last start, if any.
func (p *ipAddr) stopAnnounce() {
	p.mu.Lock()
	a := p.ann
	p.ann = nil
	p.mu.Unlock()
	a.stop()
}

// Stop removes the address; when it is not there (or the device is gone)
// there is nothing to do. The stop as a whole ends within the timeout:
// the quorum's stop budget counts on it (config.ResourceConfig.StopBound).
func (p *ipAddr) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.stopAnnounce()
	p.Unprepare()
	ok, pfx, _, err := p.present(ctx)
	if errors.Is(err, errNoDevice) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	if !ok {
		return nil
	}
	// Delete it with the prefix it has, which may differ from ours.
	p.env.Log(p.rid, "ip addr del "+pfx.String()+" dev "+p.dev)
	if _, err := p.ipCmd(ctx, "addr", "del", pfx.String(), "dev", p.dev); err != nil {
		return fmt.Errorf("%s: %w", p.rid, err)
	}
	return nil
}
