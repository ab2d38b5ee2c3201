package heartbeat

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	"haven/dataset"
	"haven/node/upgrade"
)

// The format version of the messages below (V): a node writes the cluster
// feature level's (node/upgrade) and reads every version from
// upgrade.Previous to upgrade.Current. Version 1 is the first release's;
// version 2 is version 1 with the header fields Fmt and Lvl, which a node
// of version 1 ignores (encoding/json drops unknown fields), so that
// they go out at every level. Every release writes V (0 is refused).
const (
	protoVersion = 1 // what a message of a node that does not say its level carries
	protoMin     = upgrade.Previous
	protoMax     = upgrade.Current
)

// maxMessage bounds a decoded message; anything larger is rejected.
const maxMessage = 16 << 20

// Message kinds on the wire.
const (
	kindBeat  = "beat"  // "I am alive; my data is at Gen, its digest is Dig"
	kindFull  = "full"  // the sender's whole dataset
	kindDelta = "delta" // the change from Base to Gen
	kindNeed  = "need"  // "send me a full copy" (the receiver saw a gap)
)

// message is the JSON frame every heartbeat message uses. Encryption,
// authentication and the cluster label are the transport's job.
type message struct {
	V    int    `json:"v"`
	Kind string `json:"k"`
	// Fmt is the newest format version the sender reads, Lvl the cluster
	// feature level it runs at (node/upgrade): 0 (not said, a node of
	// the first release) is 1. Every message carries them, so that its
	// receiver knows which formats it may use.
	Fmt int `json:"fmt,omitempty"`
	Lvl int `json:"lvl,omitempty"`
	// Rel is the sender's release (its --version; "" not said).
	Rel  string `json:"rel,omitempty"`
	From string `json:"from"`
	// Inc is the sender's incarnation: it changes on every start, so that a
	// restarted node whose Gen starts over is not mistaken for stale.
	Inc uint64 `json:"inc"`
	// N orders the messages of one run of the sender: strictly increasing
	// (see fresh.go); only a message newer than every one heard of its
	// run refreshes the sender's liveness. 0 (an older sender) is not
	// ordered.
	N uint64 `json:"n,omitempty"`
	// T is when the sender encoded the message: the time elapsed since
	// its run started, by its monotonic clock (fresh.go).
	T time.Duration `json:"t,omitempty"`
	// Gen is the generation of the sender's data after this message.
	Gen uint64 `json:"gen"`
	// Base is the generation a delta applies to.
	Base uint64 `json:"base,omitempty"`
	// Dig (beats) is the digest of the sender's data at Gen (see digest);
	// 0 before the first Publish.
	Dig uint64 `json:"dig,omitempty"`
	// Unseen (beats) are the members the sender heard and then declared
	// down (its own liveness verdict; a member never heard since it
	// started is not listed), sorted: a node that hears the sender learns
	// from it that the sender declared it down (one-way loss, a pause),
	// since beats go to every member, up or down.
	Unseen []string `json:"unseen,omitempty"`
	// Probe (beats): the sender has not heard the receiver for a while
	// and asks for a beat at once (see probeAfter). A node of an earlier
	// version ignores the field: it only misses the answer.
	Probe bool `json:"probe,omitempty"`
	// Twins (beats) are the members the sender hears two live runs of at
	// once (two daemons with one name): a node listed learns that another
	// daemon runs with its name. Older versions ignore the field.
	Twins []string `json:"twins,omitempty"`
	// Links (beats) is the number of network links of the sender to the
	// receiver when more than one, and Hear the links (bit i: link i,
	// 0-based) on which it hears the receiver: data goes over a link
	// heard both ways (links.go). Older versions ignore the fields.
	Links int    `json:"links,omitempty"`
	Hear  uint64 `json:"hear,omitempty"`
	// Behind (beats, with Links) says that the sender's copy of the
	// receiver's data has stayed behind what the receiver announces for
	// a beat period; DHear are the links (bit i: link i) on which the
	// receiver's data reached the sender within its hb.timeout
	// (degraded.go). Older versions ignore the fields.
	Behind bool   `json:"behind,omitempty"`
	DHear  uint64 `json:"dhear,omitempty"`
	// Ack (beats) echoes, per member heard, the newest message of its
	// run received: its N and how long ago, in nanoseconds by the
	// sender's clock (echo.go). Older versions ignore the field.
	Ack echoes `json:"ack,omitempty"`
	// Heard (beats) echoes, per member, the newest message of its run
	// that the sender counted as heard at its arrival (not a late one,
	// nor one dated back by a proved delay): what the node guard's lease
	// anchors on (Heartbeat.Acked). Older versions ignore the field.
	Heard echoes        `json:"heard,omitempty"`
	Node  *dataset.Node `json:"node,omitempty"`
	Delta *delta        `json:"delta,omitempty"`
	// ID, Op, Body and Err are those of asks and answers (ask.go).
	ID   uint64          `json:"id,omitempty"`
	Op   string          `json:"op,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
	Err  string          `json:"err,omitempty"`
}

// delta is the change between two publications of one node.
type delta struct {
	// Head, when set, replaces every field of the node but Services,
	// Targets and Configs (which are nil in it).
	Head *dataset.Node                  `json:"head,omitempty"`
	Set  map[string]dataset.Instance    `json:"set,omitempty"`
	Del  []string                       `json:"del,omitempty"`
	TSet map[string]dataset.Target      `json:"tset,omitempty"`
	TDel []string                       `json:"tdel,omitempty"`
	CSet map[string]dataset.ConfigEntry `json:"cset,omitempty"`
	CDel []string                       `json:"cdel,omitempty"`
}

func encode(m *message) []byte {
	if m.V == 0 {
		m.V = protoVersion
	}
	if b, ok := encodeFlat(m); ok {
		return b // a beat or a need, as json.Marshal makes it (beatencode.go)
	}
	b, err := json.Marshal(m)
	if err != nil {
		// Only unsupported values (NaN load) can fail; they are a bug of
		// the publisher, and a beat keeps the node alive meanwhile.
		b, _ = json.Marshal(&message{V: m.V, Fmt: m.Fmt, Lvl: m.Lvl, Kind: kindBeat, From: m.From, Inc: m.Inc})
	}
	return b
}

// wireVersion is the version of the messages of a node whose versions are
// f: its feature level's (protoVersion when it says nothing).
func wireVersion(f dataset.Format) int {
	if f.Max == 0 {
		return protoVersion
	}
	return min(max(f.Level, protoMin), protoMax)
}

// format is what m says of its sender's versions (0, not said, is 1).
func (m *message) format() dataset.Format {
	return dataset.Format{Max: max(1, m.Fmt), Level: max(1, m.Lvl), Release: m.Rel}
}

// decode parses and validates a frame. It never panics on hostile input.
func decode(b []byte) (*message, error) {
	if len(b) > maxMessage {
		return nil, fmt.Errorf("message of %d bytes exceeds %d", len(b), maxMessage)
	}
	if m, ok := decodeFlat(b); ok {
		return m, nil // a beat or a need, decoded as decodeJSON would
	}
	return decodeJSON(b)
}

// decodeJSON is decode through encoding/json, for every message.
func decodeJSON(b []byte) (*message, error) {
	if err := checkBounds(b); err != nil {
		return nil, err
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("malformed message: %w", err)
	}
	if m.V < protoMin || m.V > protoMax {
		return nil, fmt.Errorf("unsupported protocol version %d (this node reads %d to %d: a newer release at a higher cluster feature level, or an older one no longer supported)", m.V, protoMin, protoMax)
	}
	if m.From == "" {
		return nil, errors.New("message without sender")
	}
	if len(m.Ack) > maxUnseen || len(m.Heard) > maxUnseen {
		return nil, fmt.Errorf("message echoes %d members (at most %d)", max(len(m.Ack), len(m.Heard)), maxUnseen)
	}
	switch m.Kind {
	case kindBeat, kindNeed:
	case kindFull:
		if m.Node == nil {
			return nil, errors.New("full message without node")
		}
		if m.Node.Name != m.From || m.Node.Gen != m.Gen {
			return nil, errors.New("full message: node name or gen does not match the header")
		}
	case kindDelta:
		if m.Delta == nil {
			return nil, errors.New("delta message without delta")
		}
		if m.Base >= m.Gen {
			return nil, fmt.Errorf("delta from gen %d to %d does not go forward", m.Base, m.Gen)
		}
		if h := m.Delta.Head; h != nil && (h.Name != m.From || h.Services != nil || h.Targets != nil || h.Configs != nil) {
			return nil, errors.New("delta head is not a bare node header")
		}
	case kindAsk, kindAnswer:
		if err := validAsk(&m); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown message kind %q", m.Kind)
	}
	return &m, nil
}

// head returns n without its Services, Targets and Configs.
func head(n *dataset.Node) dataset.Node {
	h := *n
	h.Services, h.Targets, h.Configs, h.Gen = nil, nil, nil, 0
	return h
}

// diff returns the delta that turns prev into next.
func diff(prev, next *dataset.Node) *delta {
	d := &delta{}
	if hp, hn := head(prev), head(next); !reflect.DeepEqual(hp, hn) {
		hn.Gen = next.Gen
		d.Head = &hn
	}
	d.Set, d.Del = diffMap(prev.Services, next.Services, dataset.Instance.Equal)
	d.TSet, d.TDel = diffMap(prev.Targets, next.Targets, equal[dataset.Target])
	d.CSet, d.CDel = diffMap(prev.Configs, next.Configs, dataset.ConfigEntry.Equal)
	return d
}

func equal[V comparable](a, b V) bool { return a == b }

func (d *delta) empty() bool {
	return d.Head == nil && len(d.Set) == 0 && len(d.Del) == 0 && len(d.TSet) == 0 && len(d.TDel) == 0 &&
		len(d.CSet) == 0 && len(d.CDel) == 0
}

func diffMap[V any](prev, next map[string]V, same func(a, b V) bool) (set map[string]V, del []string) {
	for k, v := range next {
		if pv, ok := prev[k]; !ok || !same(pv, v) {
			if set == nil {
				set = map[string]V{}
			}
			set[k] = v
		}
	}
	for k := range prev {
		if _, ok := next[k]; !ok {
			del = append(del, k)
		}
	}
	sort.Strings(del)
	return set, del
}

// apply applies d to n in place (n is a private copy) and sets its Gen,
// without what would take n over a bound (bounds.go).
func (d *delta) apply(n *dataset.Node, gen uint64) {
	d.applyCounted(n, gen, resources(n.Services))
}

// applyCounted is apply when the number of resources of n's instances is
// known (res): nothing is done per entry of n.
func (d *delta) applyCounted(n *dataset.Node, gen uint64, res int) {
	d.bound(n, res)
	if d.Head != nil {
		svcs, tgts, cfgs := n.Services, n.Targets, n.Configs
		*n = *d.Head
		n.Services, n.Targets, n.Configs = svcs, tgts, cfgs
	}
	n.Services = applyMap(n.Services, d.Set, d.Del)
	n.Targets = applyMap(n.Targets, d.TSet, d.TDel)
	n.Configs = applyMap(n.Configs, d.CSet, d.CDel)
	n.Gen = gen
}

func applyMap[V any](m map[string]V, set map[string]V, del []string) map[string]V {
	if m == nil && len(set) > 0 {
		m = make(map[string]V, len(set))
	}
	for k, v := range set {
		m[k] = v
	}
	for _, k := range del {
		delete(m, k)
	}
	return m
}

// digest is a fingerprint of n as its receivers hold it: the first 8 bytes
// of the SHA-256 of its JSON form, with empty and nil top-level maps alike
// (a receiver's copy is built from JSON by full copies and deltas, and
// JSON round-trips every other value exactly). A beat carries it so that a
// receiver holding the same generation with different content (a bug, a
// corrupted copy) asks for a full copy instead of keeping it forever.
func digest(n *dataset.Node) uint64 {
	c := *n
	if len(c.Services) == 0 {
		c.Services = nil
	}
	if len(c.Targets) == 0 {
		c.Targets = nil
	}
	if len(c.Configs) == 0 {
		c.Configs = nil
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return 0 // not encodable: not sent either (see encode)
	}
	sum := sha256.Sum256(b)
	return max(1, binary.BigEndian.Uint64(sum[:8]))
}
