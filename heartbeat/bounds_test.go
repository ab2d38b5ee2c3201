package heartbeat

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

func TestShapeScanCount(t *testing.T) {
	for in, want := range map[string]int{
		`null`: 0, `{}`: 0, `[ ]`: 0, `[1]`: 1, `{"a":1}`: 1, `{"a":{"b":1,"c":[1,2]},"d":"x,}"}`: 2,
		`["\"", "\\", {"]":","}]`: 3, ` { "a" : [ ] , "b" : { } } `: 2, `"a,b"`: 0, `[1,[2,3],{"a":[4]},-1.5e3,true]`: 5,
		`{"a":`: 1, `[1,2`: 2, `}`: 0, // not JSON: whatever was counted before the stop
	} {
		s := &shapeScan{b: []byte(in)}
		if got := s.count(); got != want {
			t.Errorf("count(%s) = %d, want %d", in, got, want)
		}
	}
	// Hostile bytes: every prefix of a large message, and random bytes,
	// end the scan (decode refuses them).
	n := dataset.Node{Name: "n2", Gen: 1, Services: map[string]dataset.Instance{}, Labels: map[string]string{"a": "b"}}
	for i := range 100 {
		n.Services[fmt.Sprintf("s%03d", i)] = dataset.Instance{Avail: dataset.StatusUp, Resources: map[string]dataset.Resource{"app#1": {}}}
	}
	b := encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &n})
	if err := checkBounds(b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += 7 {
		checkBounds(b[:i])
	}
	r := rand.New(rand.NewSource(1))
	for range 200 {
		junk := make([]byte, boundsCheckAbove+r.Intn(4096))
		for i := range junk {
			junk[i] = "{}[]\",: ab1\\"[r.Intn(12)]
		}
		checkBounds(junk)
	}
}

// boundsCore is n1's core, receiving n2's messages through the codec.
func boundsCore(t testing.TB) *core {
	t.Helper()
	s, err := Config{Node: "n1", Members: []config.Member{{Name: "n1"}, {Name: "n2"}},
		Timeout: time.Second, Interval: 500 * time.Millisecond}.validate()
	if err != nil {
		t.Fatal(err)
	}
	c := newCore(s)
	c.tr = &nullTransport{}
	return c
}

// pairCores returns a sender (n2) that published nd, and a receiver (n1)
// holding its full copy at format 2.
func pairCores(t testing.TB, nd dataset.Node) (snd, rcv *core) {
	t.Helper()
	snd, rcv = boundsCore(t), boundsCore(t)
	snd.s.Node = "n2"
	snd.publish(nd)
	rcv.receive(encode(&message{V: 2, Kind: kindFull, From: "n2", Inc: 9, Gen: snd.local.Gen, Node: snd.local}))
	return snd, rcv
}

// rejection returns the reason of the first Rejected event queued.
func rejection(c *core) string {
	for {
		select {
		case ev := <-c.events:
			if ev.Kind == Rejected {
				return ev.Reason
			}
		default:
			return ""
		}
	}
}

// fullOf is n2's full copy whose node holds body (the inside of "node").
func fullOf(body string) []byte {
	return []byte(`{"v":1,"k":"full","from":"n2","inc":9,"gen":1,"node":{"name":"n2","gen":1,` + body + `}}`)
}

// Insider: one full copy of a million (empty) services, 14 MB on the
// wire, within the message size. Decoded, it took a daemon from 24 MB to
// 827 MB; now it is refused from its shape, naming the sender, and the
// receiver neither holds nor allocates anything near it.
func TestBoundsMillionServicesRefused(t *testing.T) {
	c := boundsCore(t)
	var sb strings.Builder
	sb.WriteString(`"services":{`)
	for i := range 1_000_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"s%07d":{}`, i)
	}
	sb.WriteString(`}`)
	b := fullOf(sb.String())
	if len(b) > maxMessage {
		t.Fatalf("%d bytes: over the message size", len(b))
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	c.receive(b)
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	runtime.KeepAlive(b)
	alloc, held := ms1.TotalAlloc-ms0.TotalAlloc, int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)
	t.Logf("full copy of 1,000,000 services (%d MB): %s, allocated %d MB, held %d KB after", len(b)>>20, took, alloc>>20, held>>10)
	if held > 8<<20 {
		t.Errorf("the receiver holds %d MB more after the copy, want under 8 MB", held>>20)
	}
	if alloc > 64<<20 {
		t.Errorf("receiving the copy allocated %d MB, want under 64 MB", alloc>>20)
	}
	if c.peers["n2"].data != nil {
		t.Error("the copy was installed")
	}
	if r := rejection(c); !strings.Contains(r, `"n2"`) || !strings.Contains(r, "more than 20000 services") {
		t.Errorf("rejection %q, want one naming n2 and the bound", r)
	}
}

// A delta cannot take the copy held of a peer over a bound either: the
// entries beyond it are left out (the digest then asks for a full copy,
// refused when over the bound).
func TestBoundsDeltaTrimmed(t *testing.T) {
	c := boundsCore(t)
	n := dataset.Node{Name: "n2", Gen: 1, Services: map[string]dataset.Instance{}, Configs: map[string]dataset.ConfigEntry{}}
	for i := range maxCopyServices - 5 {
		n.Services[fmt.Sprintf("s%05d", i)] = dataset.Instance{Avail: dataset.StatusUp}
	}
	c.receive(encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &n}))
	if p := c.peers["n2"]; p.data == nil || len(p.data.Services) != maxCopyServices-5 {
		t.Fatal("a full copy within the bounds was not installed")
	}
	d := &delta{Set: map[string]dataset.Instance{}, CSet: map[string]dataset.ConfigEntry{}}
	for i := range 50 {
		d.Set[fmt.Sprintf("new%02d", i)] = dataset.Instance{Avail: dataset.StatusUp}
	}
	d.Set["s00000"] = dataset.Instance{Avail: dataset.StatusDown} // a change, always applied
	c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: 1, Gen: 2, Delta: d}))
	p := c.peers["n2"]
	if p.gen != 2 || len(p.data.Services) != maxCopyServices || p.data.Services["s00000"].Avail != dataset.StatusDown {
		t.Fatalf("gen %d, %d services held (want %d), s00000 %s", p.gen, len(p.data.Services), maxCopyServices, p.data.Services["s00000"].Avail)
	}
}

// The other bounds: configs (their number, the size of one), labels,
// resources; and a copy of the size measured in docs/benchmarks.md passes.
func TestBoundsRefused(t *testing.T) {
	many := func(key string, n int, val string) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%q:{", key)
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%06d":%s`, i, val)
		}
		sb.WriteString("}")
		return sb.String()
	}
	bigRaw := strings.Repeat("x", maxConfigBytes+1)
	for _, tc := range []struct {
		body, want string
	}{
		{many("configs", maxCopyConfigs+1, `{}`), "more than 20000 configs"},
		{`"configs":{"web":{"raw":"` + bigRaw + `"}}`, `config "web" of 524289 bytes`},
		{many("labels", maxCopyLabels+1, `"v"`), "1025 labels"},
		{`"services":{"web":` + strings.Replace(many("resources", maxCopyResources+1, `{}`), `"resources":`, `{"resources":`, 1) + `}}`, "200001 resources"},
		{many("targets", maxCopyTargets+1, `{}`), "20001 targets"},
		// keys as encoding/json matches them: any case, Unicode folding, escapes
		{strings.Replace(many("targets", maxCopyTargets+1, `{}`), `"targets"`, `"TARGETS"`, 1), "20001 targets"},
		{strings.Replace(many("services", maxCopyServices+1, `{}`), `"services"`, `"\u017fervices"`, 1), "more than 20000 services"},
		{strings.Replace(many("services", maxCopyServices+1, `{}`), `"services"`, `"\u0073ervices"`, 1), "more than 20000 services"},
		{`"labels":{}},"unseen":[` + strings.Repeat(`"nnnnnnnnnnnnnnnnnnnn",`, maxUnseen) + `"n"],"x":{`, "257 members unseen"},
		// a key given twice: the counts add up
		{many("services", maxCopyServices/2+1, `{}`) + "," + many("services", maxCopyServices/2, `{}`), "more than 20000 services"},
	} {
		c := boundsCore(t)
		c.receive(fullOf(tc.body))
		if r := rejection(c); !strings.Contains(r, tc.want) || !strings.Contains(r, `"n2"`) {
			t.Errorf("%.40s...: rejection %q, want %q", tc.body, r, tc.want)
		}
		if c.peers["n2"].data != nil {
			t.Errorf("%.40s...: installed", tc.body)
		}
	}
	// 2,000 services with a resource each and a 2 KB config each: accepted
	c := boundsCore(t)
	n := dataset.Node{Name: "n2", Gen: 1, Services: map[string]dataset.Instance{}, Configs: map[string]dataset.ConfigEntry{}}
	raw := strings.Repeat("# a config line\n", 128)
	for i := range 2000 {
		name := fmt.Sprintf("svc%04d", i)
		n.Services[name] = dataset.Instance{Avail: dataset.StatusUp, Resources: map[string]dataset.Resource{"app#1": {}}}
		n.Configs[name] = dataset.ConfigEntry{Raw: raw, Digest: dataset.ConfigDigest([]byte(raw))}
	}
	c.receive(encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &n}))
	if p := c.peers["n2"]; p.data == nil || len(p.data.Configs) != 2000 {
		t.Errorf("a copy of 2,000 services and configs was not installed (%q)", rejection(c))
	}
}

// Insider: configs a node would never install (over
// 512 KiB) are refused at receipt (above), and the texts of a member's
// configs are bounded in all: a full copy cannot exceed the bound (a
// message is smaller), but deltas built the copy up without end (100
// configs of 500 KiB took every daemon from 20 to 150 MB). A config that
// would take the texts over the bound is left out.
func TestBoundsConfigTextInAll(t *testing.T) {
	text := strings.Repeat("# 500 KiB of config text, line after line\n", (500<<10)/43)
	big := strings.Repeat("# 1 MiB of config text, line after line\n", (1<<20)/41+1)
	c := boundsCore(t)
	c.receive(encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &dataset.Node{Name: "n2", Gen: 1}}))
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	fit := maxCopyConfigText / len(text)
	gen := uint64(1)
	for i := range 100 { // the attack: 100 configs of 500 KiB, one delta each
		d := &delta{CSet: map[string]dataset.ConfigEntry{fmt.Sprintf("c%03d", i): {Raw: text}}}
		c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: gen, Gen: gen + 1, Delta: d}))
		gen++
	}
	p := c.peers["n2"]
	for i := range 20 { // then 20 configs of 1 MiB: refused at receipt
		d := &delta{CSet: map[string]dataset.ConfigEntry{fmt.Sprintf("big%02d", i): {Raw: big}}}
		c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: gen + uint64(i), Gen: gen + uint64(i) + 1, Delta: d}))
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	held := int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc)
	t.Logf("copy of a member after 100 configs of 500 KiB and 20 of 1 MiB, one delta each: %d configs, %d MB held", len(p.data.Configs), held>>20)
	if held > 24<<20 {
		t.Errorf("%d MB held after the attack, want under 24 MB (16 MiB of config text at most)", held>>20)
	}
	if p.gen != gen || len(p.data.Configs) != fit {
		t.Fatalf("gen %d (want %d), %d configs of %d bytes held, want %d (%d bytes at most)", p.gen, gen, len(p.data.Configs), len(text), fit, maxCopyConfigText)
	}
	// a change that does not grow the texts goes in; once c000 shrank,
	// the config left out fits
	d := &delta{CSet: map[string]dataset.ConfigEntry{"c000": {Raw: "small\n"}}}
	c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: gen, Gen: gen + 1, Delta: d}))
	d = &delta{CSet: map[string]dataset.ConfigEntry{fmt.Sprintf("c%03d", fit): {Raw: text}}}
	c.receive(encode(&message{Kind: kindDelta, From: "n2", Inc: 9, Base: gen + 1, Gen: gen + 2, Delta: d}))
	if p.data.Configs["c000"].Raw != "small\n" || len(p.data.Configs) != fit+1 {
		t.Fatalf("c000 %.10q, %d configs: want c000 changed and the config left out taken", p.data.Configs["c000"].Raw, len(p.data.Configs))
	}
}

// A large message (2,000 configs of 7 KB: 14 MB, near the largest) is
// decoded before the core's lock is taken: the daemon's loop, which takes
// it to publish and to list the peers, is not held for the whole decode
// (a second or more on a busy host: the CLI waited that long).
func TestLargeMessageDecodedOutsideTheLock(t *testing.T) {
	c := boundsCore(t)
	n := dataset.Node{Name: "n2", Gen: 1, Services: map[string]dataset.Instance{}, Configs: map[string]dataset.ConfigEntry{}}
	raw := strings.Repeat("# padding padding padding padding\n", 220)
	for i := range 2000 {
		name := fmt.Sprintf("svc%04d", i)
		n.Configs[name] = dataset.ConfigEntry{Raw: raw, Digest: dataset.ConfigDigest([]byte(raw))}
	}
	b := encode(&message{Kind: kindFull, From: "n2", Inc: 9, Gen: 1, Node: &n})
	s := time.Now()
	if err := checkBounds(b); err != nil {
		t.Fatal(err)
	}
	t.Logf("the bounds of a full copy of %d MB checked in %s", len(b)>>20, time.Since(s))
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		c.receive(b)
		done <- time.Since(start)
	}()
	var worst time.Duration
	var took time.Duration
	for took == 0 {
		select {
		case took = <-done:
		default:
			s := time.Now()
			c.peerList()
			worst = max(worst, time.Since(s))
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("full copy of %d MB received in %s; the lock waited for at most %s meanwhile", len(b)>>20, took, worst)
	if c.peers["n2"].data == nil {
		t.Fatal("the copy was not installed")
	}
	if worst > took/2 {
		t.Errorf("peerList waited %s for a receive of %s: the lock is held while decoding", worst, took)
	}
}
