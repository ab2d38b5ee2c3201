package disk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/internal/clock"
)

// LinkName is the link name of the disk heartbeat (Liveness).
const LinkName = "disk"

// Liveness is told each time a peer's slot advanced: "peer heard just now
// on link LinkName", counted like a fresh beat.
type Liveness interface {
	NoteLinkAlive(peer, link string)
}

// Config configures one node's disk heartbeat.
type Config struct {
	// Path is [hb.disk] path: the same device or file on every node.
	Path string
	// Node is the local node; Members every member, self included (the
	// slots follow their sorted order).
	Node    string
	Members []string
	// Cluster and Secret (64 hex digits, "" when insecure) key the MACs.
	Cluster string
	Secret  string
	// Run is this run's id (the daemon's incarnation).
	Run uint64
	// Interval is the period of the writes and reads.
	Interval time.Duration
	// Timeout bounds each read and write; a disk without a good round
	// (own beat written and every slot read) for this long is lost.
	Timeout time.Duration
	Clock   clock.Clock
	Logger  *zap.Logger
	// Open opens the device (nil: OpenFile).
	Open Opener
	// Liveness, when set, is told of every advance of a peer's slot.
	Liveness Liveness
	// OnFenced is called, from the servant's goroutine, the first time a
	// fence aimed at this run is read: the caller runs its crash_command
	// at once and calls Ack when it returned.
	OnFenced func(f Fence)
	// OnState is called, from the servant's goroutine, when the disk
	// becomes reachable (ok) or is lost (no good round for Timeout).
	OnState func(ok bool, reason string)
}

// ErrBlocked: an earlier read or write has not returned yet.
var ErrBlocked = errors.New("an earlier disk I/O has not returned yet")

// slotView is what this node knows of a peer's slot.
type slotView struct {
	seen        bool // a valid beat was read once
	run, count  uint64
	lastAdvance time.Time // when the counter (or the run) last went up, here
	beat        Beat
	err         string // the last error reading it ("" when valid)
}

// fenceReq is a fence in progress (Disk.Fence).
type fenceReq struct {
	target  string
	slot    int
	nonce   [NonceLen]byte
	run     uint64 // the run aimed at (written)
	written time.Time
	created time.Time // when Fence was called
	wait    time.Duration
	done    chan string // the way the fence ended (closed once)
	ended   bool
}

// Disk is one node's disk heartbeat: a servant goroutine writes this
// node's beat block every Interval, reads every block, follows the
// peers' slots, writes the fences asked for and reads the fences aimed at
// this node. Every I/O runs in a goroutine of its own, waited for at most
// Timeout: a disk that blocks or errors is logged (rate-limited), counted
// lost after Timeout, never a crash and never a life.
type Disk struct {
	cfg   Config
	keys  *Keys
	slot  int
	clk   clock.Clock
	log   *zap.Logger
	dev   Device
	start time.Time

	inflight chan error // the I/O that has not returned (nil: none)
	quit     chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	counter  uint64
	state    byte
	ack      [NonceLen]byte
	ackBy    string
	peers    map[string]*slotView
	fences   map[string]*fenceReq
	fencedBy map[uint64]bool // the runs whose fence OnFenced was called for (this run only)
	lastGood time.Time
	lost     bool
	logged   map[string]time.Time
}

// logEvery is the rate limit of a repeated disk error (per slot and kind).
const logEvery = time.Minute

// New checks cfg and opens the device. Start begins the rounds.
func New(cfg Config) (*Disk, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Open == nil {
		cfg.Open = OpenFile
	}
	if cfg.Interval <= 0 || cfg.Timeout <= 0 {
		return nil, errors.New("disk heartbeat: interval and timeout must be more than 0")
	}
	members := slices.Clone(cfg.Members)
	slices.Sort(members)
	cfg.Members = members
	slot := slices.Index(members, cfg.Node)
	if slot < 0 {
		return nil, fmt.Errorf("disk heartbeat: %s is not a member", cfg.Node)
	}
	keys, err := NewKeys(cfg.Cluster, cfg.Secret)
	if err != nil {
		return nil, err
	}
	d := &Disk{cfg: cfg, keys: keys, slot: slot, clk: cfg.Clock, log: cfg.Logger,
		quit: make(chan struct{}), peers: map[string]*slotView{}, fences: map[string]*fenceReq{},
		fencedBy: map[uint64]bool{}, logged: map[string]time.Time{}}
	for _, m := range members {
		if m != cfg.Node {
			d.peers[m] = &slotView{}
		}
	}
	// the open may block too (a dead NFS mount)
	type opened struct {
		dev Device
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		dev, err := cfg.Open(cfg.Path)
		ch <- opened{dev, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, fmt.Errorf("disk heartbeat %s: %w", cfg.Path, o.err)
		}
		d.dev = o.dev
	case <-d.clk.After(cfg.Timeout):
		return nil, fmt.Errorf("disk heartbeat %s: open did not return within %s", cfg.Path, cfg.Timeout)
	}
	return d, nil
}

// Slot is this node's slot index.
func (d *Disk) Slot() int { return d.slot }

// Direct reports whether the device bypasses the page cache (O_DIRECT).
func (d *Disk) Direct() bool { return Direct(d.dev) }

// Start begins the rounds in the servant goroutine.
func (d *Disk) Start() {
	d.mu.Lock()
	d.start = d.clk.Now()
	d.lastGood = d.start
	d.mu.Unlock()
	d.wg.Add(1)
	go d.serve()
}

// Close stops the rounds and writes a last beat saying state
// (StateStopped: the daemon stops and its services may keep running;
// StateShutdown: they were stopped), within Timeout.
func (d *Disk) Close(state byte) error {
	select {
	case <-d.quit:
		return nil
	default:
	}
	close(d.quit)
	d.wg.Wait()
	d.mu.Lock()
	d.state = state
	d.mu.Unlock()
	err := d.writeBeat()
	d.mu.Lock()
	for _, f := range d.fences {
		d.endFence(f, "disk heartbeat stopped")
	}
	d.mu.Unlock()
	if d.inflight == nil {
		d.dev.Close()
	} // else the blocked I/O keeps the descriptor: closing it under it helps nothing
	return err
}

// Ack says, in this node's next beats, that the fence of nonce by fencer
// was carried out (its crash_command returned and the node is still up).
func (d *Disk) Ack(nonce [NonceLen]byte, fencer string) {
	d.mu.Lock()
	d.ack, d.ackBy = nonce, fencer
	d.mu.Unlock()
}

func (d *Disk) serve() {
	defer d.wg.Done()
	for {
		d.round()
		select {
		case <-d.quit:
			return
		case <-d.clk.After(d.cfg.Interval):
		}
	}
}

// io runs op in a goroutine of its own and waits for it at most Timeout.
// While an earlier op has not returned, no new one starts (ErrBlocked).
func (d *Disk) io(op func() error) error {
	if d.inflight != nil {
		select {
		case <-d.inflight:
			d.inflight = nil
		default:
			return ErrBlocked
		}
	}
	ch := make(chan error, 1)
	go func() { ch <- op() }()
	select {
	case err := <-ch:
		return err
	case <-d.clk.After(d.cfg.Timeout):
		d.inflight = ch
		return fmt.Errorf("disk I/O did not return within %s", d.cfg.Timeout)
	}
}

func (d *Disk) writeBeat() error {
	d.mu.Lock()
	d.counter++
	b := d.keys.EncodeBeat(Beat{Writer: d.cfg.Node, Slot: d.slot, Run: d.cfg.Run, Counter: d.counter,
		Time: d.clk.Now(), State: d.state, AckNonce: d.ack, AckFencer: d.ackBy})
	d.mu.Unlock()
	return d.io(func() error {
		_, err := d.dev.WriteAt(b, BeatOffset(d.slot))
		return err
	})
}

// round is one period: write this node's beat, the fences in progress,
// read every block, follow them.
func (d *Disk) round() {
	now := d.clk.Now()
	werr := d.writeBeat()
	if werr != nil {
		d.logErr("write", "write of this node's slot failed", werr)
	}
	d.writeFences()
	n := len(d.cfg.Members)
	buf := make([]byte, 2*n*BlockSize)
	var got int
	rerr := d.io(func() error {
		var err error
		got, err = d.dev.ReadAt(buf, 0)
		return err
	})
	if rerr != nil && !isEOF(rerr) {
		d.logErr("read", "read of the slots failed", rerr)
	} else {
		buf = buf[:got] // beyond the end of a file: never written
		if rerr = d.follow(buf, now); rerr != nil {
			d.logErr("readback", "this node's slot does not read back what it wrote (a disk that lies, or another writer): not a good round", rerr)
		}
	}
	d.mu.Lock()
	var change *bool
	reason := ""
	if werr == nil && rerr == nil {
		d.lastGood = now
		if d.lost {
			d.lost = false
			t := true
			change = &t
		}
	} else if end := d.clk.Now(); !d.lost && end.Sub(d.lastGood) >= d.cfg.Timeout {
		// at the end of the round: an I/O that blocked for Timeout makes
		// the disk lost at once (within Timeout + one period of the last
		// good round's start)
		d.lost = true
		f := false
		change = &f
		reason = fmt.Sprintf("no good disk round for %s", end.Sub(d.lastGood).Round(time.Millisecond))
		if werr != nil {
			reason += ": " + werr.Error()
		} else if rerr != nil {
			reason += ": " + rerr.Error()
		}
	}
	d.checkFences(now)
	d.mu.Unlock()
	if change != nil {
		if *change {
			d.log.Info("disk heartbeat reachable again", zap.String("path", d.cfg.Path))
		} else {
			d.log.Error("disk heartbeat lost", zap.String("path", d.cfg.Path), zap.String("reason", reason))
		}
		if d.cfg.OnState != nil {
			d.cfg.OnState(*change, reason)
		}
	}
}

// isEOF: a file shorter than every slot (the rest was never written).
func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// block returns block i of buf, short or empty beyond its end.
func block(buf []byte, off int64) []byte {
	if off >= int64(len(buf)) {
		return nil
	}
	end := min(off+BlockSize, int64(len(buf)))
	return buf[off:end]
}

// follow reads the blocks: the peers' beats (advances, acks) and the
// fence block of this node.
// It returns an error when this node's own beat block does not read back
// as written (the round is then not good: a disk that returns old blocks
// would hide this node's stall from the fencers).
func (d *Disk) follow(buf []byte, now time.Time) error {
	var advanced []string
	var fenced *Fence
	var own error
	d.mu.Lock()
	for i, m := range d.cfg.Members {
		if m == d.cfg.Node {
			if bt, err := d.keys.DecodeBeat(block(buf, BeatOffset(i)), i); err != nil {
				own = fmt.Errorf("own slot: %w", err)
			} else if bt.Writer != m || bt.Run != d.cfg.Run || bt.Counter != d.counter {
				own = fmt.Errorf("own slot reads back %s run %d counter %d, wrote run %d counter %d", bt.Writer, bt.Run, bt.Counter, d.cfg.Run, d.counter)
			}
			f, err := d.keys.DecodeFence(block(buf, FenceOffset(i)), i)
			switch {
			case errors.Is(err, ErrEmpty):
			case err != nil:
				d.logErrLocked("fence:"+m+":"+kindOf(err), "this node's fence block is unreadable (ignored: no fence)", err, zap.Int("slot", i))
			case f.Target != d.cfg.Node:
				d.logErrLocked("fence:"+m+":target", "this node's fence block names another target (ignored)", nil, zap.String("target", f.Target))
			case f.TargetRun != d.cfg.Run:
				// aimed at an earlier run: this run ignores it
			case !d.fencedBy[f.TargetRun]:
				d.fencedBy[f.TargetRun] = true
				fenced = &f
			}
			continue
		}
		v := d.peers[m]
		bt, err := d.keys.DecodeBeat(block(buf, BeatOffset(i)), i)
		if err == nil && bt.Writer != m {
			err = fmt.Errorf("%w: written by %q, the slot of %s", ErrWrongSlot, bt.Writer, m)
		}
		if err != nil {
			if !errors.Is(err, ErrEmpty) {
				d.logErrLocked("beat:"+m+":"+kindOf(err), "a peer's slot is unreadable (not counted alive)", err, zap.String("peer", m), zap.Int("slot", i))
			}
			v.err = err.Error()
			continue
		}
		v.err = ""
		switch {
		case !v.seen:
			// first sight: no advance yet (an old block proves nothing)
			v.seen, v.run, v.count, v.beat = true, bt.Run, bt.Counter, bt
		case bt.Run > v.run || bt.Run == v.run && bt.Counter > v.count:
			v.run, v.count, v.beat, v.lastAdvance = bt.Run, bt.Counter, bt, now
			advanced = append(advanced, m)
		default:
			v.beat = bt // acks and state of an older read: same counter
		}
	}
	d.mu.Unlock()
	if d.cfg.Liveness != nil {
		for _, m := range advanced {
			d.cfg.Liveness.NoteLinkAlive(m, LinkName)
		}
	}
	if fenced != nil {
		d.log.Error("fence read in this node's slot: running crash_command", zap.String("fencer", fenced.Fencer), zap.Uint64("run", fenced.TargetRun))
		if d.cfg.OnFenced != nil {
			d.cfg.OnFenced(*fenced)
		}
	}
	return own
}

func kindOf(err error) string {
	for _, e := range []error{ErrTruncated, ErrGarbage, ErrVersion, ErrOtherCluster, ErrChecksum, ErrMalformed, ErrWrongSlot} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "other"
}

func (d *Disk) logErr(key, msg string, err error, fields ...zap.Field) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logErrLocked(key, msg, err, fields...)
}

// logErrLocked logs msg once per logEvery for key.
func (d *Disk) logErrLocked(key, msg string, err error, fields ...zap.Field) {
	now := d.clk.Now()
	if t, ok := d.logged[key]; ok && now.Sub(t) < logEvery {
		return
	}
	d.logged[key] = now
	fields = append(fields, zap.String("path", d.cfg.Path))
	if err != nil {
		fields = append(fields, zap.Error(err))
	}
	d.log.Warn("disk heartbeat: "+msg, fields...)
}

// Fence fences target through the disk: its fence block gets a fence
// aimed at its current run, and Fence returns nil once target's slot
// acknowledges it (its crash_command returned), or once its slot has not
// advanced for wait since the fence began (stallFrom), the fence on the disk (the target either
// read it and went down, or lost the disk longer than it may run without
// it). It returns an error when ctx ends first, when the target's last
// beat says its daemon stopped on purpose (its services may run, nobody
// reads its fence block), or when this node's disk writes fail.
func (d *Disk) Fence(ctx context.Context, target string, wait time.Duration) (how string, err error) {
	slot := slices.Index(d.cfg.Members, target)
	if slot < 0 || target == d.cfg.Node {
		return "", fmt.Errorf("%s has no slot to fence", target)
	}
	f := &fenceReq{target: target, slot: slot, wait: wait, created: d.clk.Now(), done: make(chan string, 1)}
	if _, err := rand.Read(f.nonce[:]); err != nil {
		return "", err
	}
	d.mu.Lock()
	if old := d.fences[target]; old != nil {
		d.endFence(old, "superseded")
	}
	d.fences[target] = f
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		if d.fences[target] == f {
			delete(d.fences, target)
		}
		d.mu.Unlock()
	}()
	select {
	case how := <-f.done:
		if how == "" {
			return "", errors.New("disk fence ended")
		}
		if how[0] == '!' {
			return "", errors.New(how[1:])
		}
		return how, nil
	case <-ctx.Done():
		d.mu.Lock()
		why := d.fenceWaitLocked(f)
		d.mu.Unlock()
		return "", fmt.Errorf("disk fence of %s not done: %s", target, why)
	}
}

func (d *Disk) endFence(f *fenceReq, how string) {
	if f.ended {
		return
	}
	f.ended = true
	f.done <- how
}

// fenceWaitLocked says what a fence in progress waits for.
func (d *Disk) fenceWaitLocked(f *fenceReq) string {
	if f.written.IsZero() {
		return "the fence block could not be written yet"
	}
	v := d.peers[f.target]
	return fmt.Sprintf("no acknowledgement, and %s's slot advanced %s ago (the fence needs %s without an advance)",
		f.target, d.clk.Now().Sub(d.stallFrom(v, f)).Round(time.Millisecond), f.wait)
}

// stallFrom is when the stall of the target's slot counts from: the last
// advance seen, but no earlier than this fence's start (a target that lost
// the disk long ago reacts to it only once it also lost the majority,
// around the time it was declared down and the fence began) nor than this
// node's start of the disk heartbeat (an old block proves nothing).
func (d *Disk) stallFrom(v *slotView, f *fenceReq) time.Time {
	t := f.created
	if d.start.After(t) {
		t = d.start
	}
	if v.lastAdvance.After(t) {
		t = v.lastAdvance
	}
	return t
}

// writeFences writes the fence block of each fence in progress, aimed at
// the target's latest run (again when it changed).
func (d *Disk) writeFences() {
	d.mu.Lock()
	var todo []*fenceReq
	for _, f := range d.fences {
		run := d.peers[f.target].run
		if f.written.IsZero() || f.run != run {
			f.run = run
			todo = append(todo, f)
		}
	}
	d.mu.Unlock()
	for _, f := range todo {
		b := d.keys.EncodeFence(Fence{Fencer: d.cfg.Node, Target: f.target, Slot: f.slot, TargetRun: f.run, Nonce: f.nonce, Time: d.clk.Now()})
		err := d.io(func() error {
			_, err := d.dev.WriteAt(b, FenceOffset(f.slot))
			return err
		})
		d.mu.Lock()
		if err != nil {
			f.written = time.Time{}
			d.logErrLocked("fencewrite:"+f.target, "write of a fence failed (retried next period)", err, zap.String("target", f.target))
		} else if f.written.IsZero() {
			f.written = d.clk.Now()
			d.log.Warn("disk heartbeat: fence written in a peer's slot", zap.String("target", f.target), zap.Uint64("run", f.run))
		}
		d.mu.Unlock()
	}
}

// checkFences ends the fences acknowledged or whose target's slot stalled.
func (d *Disk) checkFences(now time.Time) {
	for _, f := range d.fences {
		if f.ended || f.written.IsZero() {
			continue
		}
		v := d.peers[f.target]
		if v.seen && v.beat.Run == f.run && v.beat.AckNonce != ([NonceLen]byte{}) {
			d.endFence(f, fmt.Sprintf("acknowledged by %s (fence read, crash_command run)", f.target))
			continue
		}
		from := d.stallFrom(v, f)
		if now.Sub(from) < f.wait || now.Sub(f.written) < 0 {
			continue
		}
		if v.seen && v.beat.State == StateStopped {
			d.endFence(f, "!"+f.target+"'s slot says its daemon was stopped on purpose (its services may still run, nobody reads its fence block): the disk cannot fence it")
			continue
		}
		d.endFence(f, fmt.Sprintf("%s's slot has not advanced for %s", f.target, now.Sub(from).Round(time.Millisecond)))
	}
}

// PeerSlot is what this node reads of a peer's slot.
type PeerSlot struct {
	Seen        bool
	Run         uint64
	Counter     uint64
	LastAdvance time.Time
	Err         string
}

// Peer returns the state of a peer's slot.
func (d *Disk) Peer(name string) (PeerSlot, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.peers[name]
	if !ok {
		return PeerSlot{}, false
	}
	return PeerSlot{Seen: v.seen, Run: v.run, Counter: v.count, LastAdvance: v.lastAdvance, Err: v.err}, true
}

// Reachable reports whether the disk had a good round within Timeout.
func (d *Disk) Reachable() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.lost
}
