package disk

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// On-disk layout (docs/operations.md, "Disk heartbeat").
//
// The device holds two blocks of BlockSize bytes per member, in the order
// of the sorted member list of cluster.toml: member i's beat block at
// offset 2*i*BlockSize, written by member i alone every period, and its
// fence block at (2*i+1)*BlockSize, written only by the members that fence
// it. A block is:
//
//	0   magic "HAVENDSK" (8 bytes)
//	8   version (uint16, big endian) = 1
//	10  kind (1 byte: 1 beat, 2 fence)
//	11  flags (1: the writer's per-reader tags follow the MAC, pair.go)
//	12  body length (uint16)
//	14  body
//	14+len  HMAC-SHA256 of bytes 0..14+len, 32 bytes
//	14+len+32  with flag 1: the writer's tags, one per reader (pair.go)
//	rest zero
//
// A beat's body: the cluster, the writer, its slot, run, counter, clock,
// state, period and guard, then three counted lists: the newest block the writer
// read of each other slot (its echo: slot, run, counter), the fences it
// conducts (target slot, target run, nonce) and its acknowledgements
// (fencer slot, nonce). A fence block's body: the cluster, the fencer, the
// target, its slot, the target's run, the nonce and the fencer's clock.
//
// The MAC key is HKDF-SHA256 of the cluster secret and the cluster name:
// a host that reads and writes the disk but lacks the secret can neither
// forge a beat nor a fence. With per-node keys each block also carries a
// tag per reader under a key of the writer's and that reader's key pairs
// (pair.go): a member's files no longer write another member's slot. The
// cluster name is also in clear in every
// body, so that a disk of another cluster is named as such in the logs.
const (
	BlockSize = 4096
	magic     = "HAVENDSK"
	version   = 1
	headerLen = 14
	macLen    = 32
	NonceLen  = 16
)

// Block kinds.
const (
	kindBeat  = 1
	kindFence = 2
)

// Beat states (Beat.State): what the writer's daemon is doing.
const (
	StateRunning  = 0 // the daemon runs and reads its fence block
	StateStopped  = 1 // the daemon stopped on purpose; its services may still run
	StateShutdown = 2 // the daemon stopped after stopping its services
)

// Guard flags (Beat.Guard): what the writer's run does by itself, from its
// own node.toml, so that a fencer knows what a stalled slot proves.
const (
	// GuardStops: the writer stops its services by itself when it loses
	// the fencing disk and does not hear a majority of the members
	// (hb.disk.fence = true and split_action stop, crash or reboot).
	GuardStops = 1
	// GuardWatchdog: a watchdog resets the writer's host when its daemon
	// hangs or is paused (node.watchdog_device armed).
	GuardWatchdog = 2
)

// The errors of Decode. A block that was never written (all zero, or
// beyond the end of a file) is ErrEmpty: no log, no life.
var (
	ErrEmpty        = errors.New("empty block (never written)")
	ErrTruncated    = errors.New("truncated block")
	ErrGarbage      = errors.New("not a Haven disk heartbeat block (bad magic)")
	ErrVersion      = errors.New("unknown block version")
	ErrOtherCluster = errors.New("block of another cluster")
	ErrChecksum     = errors.New("bad checksum (damaged, or written without this cluster's secret)")
	ErrMalformed    = errors.New("malformed block body")
	ErrWrongSlot    = errors.New("block written for another slot")
)

// Beat is a member's beat block.
type Beat struct {
	Cluster string
	Writer  string
	Slot    int
	// Run is the writer's run id (the daemon's incarnation): a new run
	// restarts the counter.
	Run     uint64
	Counter uint64
	Time    time.Time
	State   byte
	// Period is the writer's period (how often it writes and reads).
	Period time.Duration
	// Guard says what the writer's run does by itself (GuardStops,
	// GuardWatchdog): the same in every beat of a run.
	Guard byte
	// Seen echoes, for each other slot, the newest block the writer read
	// there: a reader counts a block as written now (a sign of life, a
	// fence, an acknowledgement) only when it echoes a block the reader
	// wrote recently in its current run, which a recorded block cannot.
	Seen []Seen
	// Fences are the fences the writer conducts: a target obeys a fence
	// only while its fencer's own beat announces it.
	Fences []Announce
	// Acks acknowledge fences aimed at this run: the writer read them, ran
	// its crash_command, and is still up to say so.
	Acks []Ack
}

// Seen is the newest block of slot Slot its reader read (run, counter).
type Seen struct {
	Slot         int
	Run, Counter uint64
}

// Announce is a fence in a fencer's beat: the target's slot and run, and
// the nonce of this fence.
type Announce struct {
	Slot  int
	Run   uint64
	Nonce [NonceLen]byte
}

// Ack acknowledges the fence of nonce Nonce by the fencer of slot Slot.
type Ack struct {
	Slot  int
	Nonce [NonceLen]byte
}

// Bounds of a beat's lists (a block is 4 KiB: with the longest names they
// still fit).
const (
	maxSeen     = 100
	maxAnnounce = 32
	maxAcks     = 32
)

// SeenOf is the writer's echo of slot (false: none).
func (b Beat) SeenOf(slot int) (Seen, bool) {
	for _, s := range b.Seen {
		if s.Slot == slot {
			return s, true
		}
	}
	return Seen{}, false
}

// Fence is a member's fence block: a record, on the target's slot, of a
// fence in progress (what the target obeys is the announcement in the
// fencer's beat, Beat.Fences).
type Fence struct {
	Cluster string
	Fencer  string
	Target  string
	Slot    int
	// TargetRun is the run of the target the fence is aimed at: a later
	// run of the target (it restarted) ignores it.
	TargetRun uint64
	Nonce     [NonceLen]byte
	Time      time.Time
}

// Keys seals and checks the blocks of one cluster.
type Keys struct {
	cluster string
	key     []byte
	// prk is the secret's disk master key (the root of the pairwise
	// keys too); pair, the per-node keys (nil: none, SetNodeKeys).
	prk  []byte
	pair *pairKeys
}

// NewKeys derives the MAC key from the cluster secret (64 hex digits) and
// the cluster name. An empty secret (cluster.insecure_no_secret, tests)
// derives it from a fixed label and the name: damage and other clusters
// are still detected, forgery is not stopped.
func NewKeys(cluster, secretHex string) (*Keys, error) {
	secret, err := hex.DecodeString(secretHex)
	if err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	if len(secret) == 0 {
		secret = []byte("haven insecure disk key")
	}
	prk, err := hkdf.Extract(sha256.New, secret, []byte("haven disk heartbeat v1"))
	if err != nil {
		return nil, err
	}
	key, err := hkdf.Expand(sha256.New, prk, "slot mac:"+cluster, 32)
	if err != nil {
		return nil, err
	}
	return &Keys{cluster: cluster, key: key, prk: prk}, nil
}

// enc is a small big-endian writer.
type enc struct{ b []byte }

func (e *enc) str(s string) {
	if len(s) > 255 {
		s = s[:255]
	}
	e.b = append(e.b, byte(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }

// dec is its reader; a short body sets bad.
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return make([]byte, n)
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}
func (d *dec) str() string { n := d.take(1)[0]; return string(d.take(int(n))) }
func (d *dec) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *dec) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }
func (d *dec) byte1() byte { return d.take(1)[0] }
func (d *dec) done() bool  { return !d.bad && len(d.b) == 0 }
func (d *dec) nonce() (n [NonceLen]byte) {
	copy(n[:], d.take(NonceLen))
	return n
}

func (k *Keys) seal(kind byte, body []byte) []byte {
	b := make([]byte, BlockSize)
	copy(b, magic)
	binary.BigEndian.PutUint16(b[8:], version)
	b[10] = kind
	binary.BigEndian.PutUint16(b[12:], uint16(len(body)))
	copy(b[headerLen:], body)
	if k.pair != nil {
		b[11] = flagPair
	}
	m := hmac.New(sha256.New, k.key)
	m.Write(b[:headerLen+len(body)])
	copy(b[headerLen+len(body):], m.Sum(nil))
	if k.pair != nil {
		k.tagBlock(b, len(body))
	}
	return b
}

// room is the most a body may take in a block of this node.
func (k *Keys) room() int { return BlockSize - headerLen - macLen - k.pairLen() }

// open checks a block's header and MAC and returns its body. The cluster
// name is read first (every body starts with it) so that a block of
// another cluster is told apart from a damaged one.
func (k *Keys) open(b []byte, kind byte) ([]byte, error) {
	if len(b) < BlockSize {
		if allZero(b) {
			return nil, ErrEmpty
		}
		return nil, ErrTruncated
	}
	if allZero(b[:BlockSize]) {
		return nil, ErrEmpty
	}
	if string(b[:8]) != magic {
		return nil, ErrGarbage
	}
	if v := binary.BigEndian.Uint16(b[8:]); v != version {
		return nil, fmt.Errorf("%w %d", ErrVersion, v)
	}
	if b[10] != kind {
		return nil, fmt.Errorf("%w: kind %d where %d belongs", ErrMalformed, b[10], kind)
	}
	n := int(binary.BigEndian.Uint16(b[12:]))
	if headerLen+n+macLen > BlockSize {
		return nil, fmt.Errorf("%w: body length %d", ErrMalformed, n)
	}
	body := b[headerLen : headerLen+n]
	cd := dec{b: body}
	if c := cd.str(); !cd.bad && c != k.cluster {
		return nil, fmt.Errorf("%w %q", ErrOtherCluster, c)
	}
	m := hmac.New(sha256.New, k.key)
	m.Write(b[:headerLen+n])
	if !hmac.Equal(m.Sum(nil), b[headerLen+n:headerLen+n+macLen]) {
		return nil, ErrChecksum
	}
	return body, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// EncodeBeat seals a beat block (lists beyond their bounds are cut).
func (k *Keys) EncodeBeat(bt Beat) []byte {
	e := enc{}
	e.str(k.cluster)
	e.str(bt.Writer)
	e.u16(uint16(bt.Slot))
	e.u64(bt.Run)
	e.u64(bt.Counter)
	e.u64(uint64(bt.Time.UnixNano()))
	e.b = append(e.b, bt.State)
	e.u64(uint64(max(bt.Period, 0)))
	e.b = append(e.b, bt.Guard)
	fences := bt.Fences[:min(len(bt.Fences), maxAnnounce)]
	acks := bt.Acks[:min(len(bt.Acks), maxAcks)]
	// the echo is cut to what the block holds beside the fences, the
	// acknowledgements and the tags (with 32 members tagged, the longest
	// names and every list full, still about 80 slots)
	fit := (k.room() - len(e.b) - 3 - 26*len(fences) - 18*len(acks)) / 18
	seen := bt.Seen[:max(0, min(len(bt.Seen), maxSeen, fit))]
	e.b = append(e.b, byte(len(seen)))
	for _, s := range seen {
		e.u16(uint16(s.Slot))
		e.u64(s.Run)
		e.u64(s.Counter)
	}
	e.b = append(e.b, byte(len(fences)))
	for _, a := range fences {
		e.u16(uint16(a.Slot))
		e.u64(a.Run)
		e.b = append(e.b, a.Nonce[:]...)
	}
	e.b = append(e.b, byte(len(acks)))
	for _, a := range acks {
		e.u16(uint16(a.Slot))
		e.b = append(e.b, a.Nonce[:]...)
	}
	return k.seal(kindBeat, e.b)
}

// DecodeBeat opens the beat block of slot.
func (k *Keys) DecodeBeat(b []byte, slot int) (Beat, error) {
	body, err := k.open(b, kindBeat)
	if err != nil {
		return Beat{}, err
	}
	d := dec{b: body}
	bt := Beat{Cluster: d.str(), Writer: d.str(), Slot: int(d.u16()), Run: d.u64(), Counter: d.u64()}
	bt.Time = time.Unix(0, int64(d.u64()))
	bt.State = d.byte1()
	bt.Period = time.Duration(min(d.u64(), uint64(1<<62)))
	bt.Guard = d.byte1()
	err = decList(&d, maxSeen, "slots seen", func() {
		bt.Seen = append(bt.Seen, Seen{Slot: int(d.u16()), Run: d.u64(), Counter: d.u64()})
	})
	if err == nil {
		err = decList(&d, maxAnnounce, "fences", func() {
			bt.Fences = append(bt.Fences, Announce{Slot: int(d.u16()), Run: d.u64(), Nonce: d.nonce()})
		})
	}
	if err == nil {
		err = decList(&d, maxAcks, "acknowledgements", func() {
			bt.Acks = append(bt.Acks, Ack{Slot: int(d.u16()), Nonce: d.nonce()})
		})
	}
	if err != nil {
		return Beat{}, err
	}
	if !d.done() {
		return Beat{}, ErrMalformed
	}
	if bt.Slot != slot {
		return Beat{}, fmt.Errorf("%w: slot %d found in slot %d", ErrWrongSlot, bt.Slot, slot)
	}
	if err := k.checkPair(b, len(body), bt.Writer); err != nil {
		return Beat{}, err
	}
	return bt, nil
}

// decList reads a counted list of at most max entries, each with one.
func decList(d *dec, max int, what string, one func()) error {
	n := int(d.byte1())
	if n > max {
		return fmt.Errorf("%w: %d %s", ErrMalformed, n, what)
	}
	for i := 0; i < n && !d.bad; i++ {
		one()
	}
	return nil
}

// EncodeFence seals a fence block.
func (k *Keys) EncodeFence(f Fence) []byte {
	e := enc{}
	e.str(k.cluster)
	e.str(f.Fencer)
	e.str(f.Target)
	e.u16(uint16(f.Slot))
	e.u64(f.TargetRun)
	e.b = append(e.b, f.Nonce[:]...)
	e.u64(uint64(f.Time.UnixNano()))
	return k.seal(kindFence, e.b)
}

// DecodeFence opens the fence block of slot.
func (k *Keys) DecodeFence(b []byte, slot int) (Fence, error) {
	body, err := k.open(b, kindFence)
	if err != nil {
		return Fence{}, err
	}
	d := dec{b: body}
	f := Fence{Cluster: d.str(), Fencer: d.str(), Target: d.str(), Slot: int(d.u16()), TargetRun: d.u64(), Nonce: d.nonce()}
	f.Time = time.Unix(0, int64(d.u64()))
	if !d.done() {
		return Fence{}, ErrMalformed
	}
	if f.Slot != slot {
		return Fence{}, fmt.Errorf("%w: slot %d found in slot %d", ErrWrongSlot, f.Slot, slot)
	}
	if err := k.checkPair(b, len(body), f.Fencer); err != nil {
		return Fence{}, err
	}
	return f, nil
}

// BeatOffset and FenceOffset are where the blocks of slot lie.
func BeatOffset(slot int) int64  { return int64(2*slot) * BlockSize }
func FenceOffset(slot int) int64 { return int64(2*slot+1) * BlockSize }
