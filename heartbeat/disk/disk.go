package disk

import (
	"context"
	"crypto/ecdh"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
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
	// NodeKey is this node's key pair (node.key, nil: none), MemberKeys
	// the members' public keys (cluster.toml [node_keys]) and
	// NodeKeysMode cluster.node_keys_mode: with a key pair this node's
	// blocks carry a tag per listed reader, and a listed writer's blocks
	// are refused unless their tag for this node verifies ("require") or
	// unless they carry one that does not ("accept", "send"): pair.go.
	NodeKey      *ecdh.PrivateKey
	MemberKeys   map[string]*ecdh.PublicKey
	NodeKeysMode string
	// Run is this run's id (the daemon's incarnation).
	Run uint64
	// Guard is what this run does by itself (GuardStops, GuardWatchdog),
	// said in every beat: a fencer counts this node's stalled slot as
	// the fence done only when it stops by itself without the disk.
	Guard byte
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
	// fence aimed at this run is read in a fencer's beat (a block that
	// echoes a recent block of this run), and again for a fence read after
	// ResetFenced: the caller runs its crash_command at once and calls
	// Ack once its host is known not to run its services any more.
	OnFenced func(f Fence)
	// OnState is called, from the servant's goroutine, when the disk
	// becomes reachable (ok) or is lost (no good round for Timeout).
	OnState func(ok bool, reason string)
}

// ErrBlocked: an earlier read or write has not returned yet.
var ErrBlocked = errors.New("an earlier disk I/O has not returned yet")

// slotView is what this node knows of a peer's slot.
type slotView struct {
	seen bool // a valid beat was read once
	// run, count are the newest block read (a block older than it counts
	// for nothing: a replay); beat is that block.
	run, count uint64
	beat       Beat
	// fresh: the newest block echoes a block this node wrote within the
	// freshness window of this run (written after reading it: no replay
	// of a recording).
	fresh bool
	// lastAdvance is when the newest block last went up with a fresh
	// echo, here: the peer's last sign of life.
	lastAdvance time.Time
	err         string // the last error reading it ("" when valid)
	// fenceBy is the fencer its fence block names ("" none, or unreadable).
	fenceBy string
}

// fenceReq is a fence in progress (Disk.Fence).
type fenceReq struct {
	target string
	slot   int
	nonce  [NonceLen]byte
	run    uint64 // the run aimed at (announced)
	// announced is when a beat of this node announcing the fence was
	// first written; recorded, when its record was written in the
	// target's fence block for run.
	announced time.Time
	recorded  uint64
	created   time.Time // when Fence was called
	wait      time.Duration
	// netRun and netStops are what the fencer knows of the target from
	// the network (FenceOpts.Run, Stops); unguarded says why the stall
	// counted so far proves nothing ("" when it does, or not yet due).
	netRun    uint64
	netStops  bool
	unguarded string
	done      chan string // the way the fence ended (closed once)
	ended     bool
}

// stamp is a counter this node wrote, and when.
type stamp struct {
	counter uint64
	at      time.Time
}

// Disk is one node's disk heartbeat: a servant goroutine writes this
// node's beat block every Interval, reads every block at a random time
// within the period, follows the peers' slots, announces the fences asked
// for and obeys the fences announced against this run. Every I/O runs in a
// goroutine of its own, waited for at most Timeout: a disk that blocks or
// errors is logged (rate-limited), counted lost after Timeout, never a
// crash and never a life.
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

	mu sync.Mutex
	// counter is the last counter given to a beat; written the last one
	// whose write succeeded (what this node's slot must read back);
	// history the counters written within the freshness window.
	counter, written uint64
	history          []stamp
	state            byte
	// fencesIn are the fences aimed at this run read in their fencers'
	// beats (fencer's slot -> nonce); obeyed: OnFenced was called (until
	// ResetFenced); acked: the caller said its services are down (Ack),
	// the fences are acknowledged.
	fencesIn map[int][NonceLen]byte
	obeyed   bool
	acked    bool
	peers    map[string]*slotView
	fences   map[string]*fenceReq
	clear    map[int]bool // fence blocks to clear once they read as this node's
	werr     error        // the write error of the current round
	lastGood time.Time
	// tampered is when this node's slot last read back a block it did not
	// write (another writer, or a disk that returns old blocks); doubt is
	// the end of the last round that was not good or had the disk lost:
	// a stall is counted from after it.
	tampered, doubt time.Time
	lost            bool
	logged          map[string]time.Time
	// notOwnKey counts the reads of a block refused for not being
	// authenticated with its writer's node key (ErrNotOwnKey).
	notOwnKey uint64
}

// logEvery is the rate limit of a repeated disk error (per slot and kind).
const logEvery = time.Minute

// ConfigError is New's refusal of its Config (not of the device): the
// same config is refused again, so a caller does not retry it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

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
		return nil, &ConfigError{errors.New("disk heartbeat: interval and timeout must be more than 0")}
	}
	members := slices.Clone(cfg.Members)
	slices.Sort(members)
	cfg.Members = members
	slot := slices.Index(members, cfg.Node)
	if slot < 0 {
		return nil, &ConfigError{fmt.Errorf("disk heartbeat: %s is not a member", cfg.Node)}
	}
	keys, err := NewKeys(cfg.Cluster, cfg.Secret)
	if err != nil {
		return nil, &ConfigError{err}
	}
	if err := keys.SetNodeKeys(cfg.Node, members, cfg.NodeKey, cfg.MemberKeys, cfg.NodeKeysMode); err != nil {
		return nil, &ConfigError{err}
	}
	d := &Disk{cfg: cfg, keys: keys, slot: slot, clk: cfg.Clock, log: cfg.Logger,
		quit: make(chan struct{}), peers: map[string]*slotView{}, fences: map[string]*fenceReq{},
		fencesIn: map[int][NonceLen]byte{}, clear: map[int]bool{}, logged: map[string]time.Time{}}
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
	d.begin()
	d.wg.Add(1)
	go d.serve()
}

func (d *Disk) begin() {
	d.mu.Lock()
	d.start = d.clk.Now()
	d.lastGood = d.start
	d.mu.Unlock()
}

// Close stops the rounds and writes a last beat saying state
// (StateStopped: the daemon stops and its services may keep running;
// StateShutdown: they were stopped), within Timeout. The fences in
// progress end first: the last beat announces none.
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
	for _, f := range d.fences {
		d.endFence(f, "disk heartbeat stopped")
	}
	d.mu.Unlock()
	err := d.writeBeat(d.clk.Now())
	if d.inflight == nil {
		d.dev.Close()
	} // else the blocked I/O keeps the descriptor: closing it under it helps nothing
	return err
}

// Ack says, in this node's next beats, that the fences aimed at this run
// were carried out (its crash_command returned, the node is still up, but
// its services are stopped and it starts none): each fence read, and each
// read later, is acknowledged with its nonce, until ResetFenced.
func (d *Disk) Ack() {
	d.mu.Lock()
	d.acked = true
	d.mu.Unlock()
}

// ResetFenced ends the obedience of this run to the fences read so far
// (the node was thawed after its fence: it may run services again): the
// acknowledgements stop, and a fence read from now on is obeyed anew
// (OnFenced), not acknowledged at once.
func (d *Disk) ResetFenced() {
	d.mu.Lock()
	d.obeyed, d.acked = false, false
	clear(d.fencesIn)
	d.mu.Unlock()
}

// Fenced reports whether a fence aimed at this run was obeyed since the
// start or the last ResetFenced, and whether it is acknowledged.
func (d *Disk) Fenced() (obeyed, acked bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.obeyed, d.acked
}

// serve runs the rounds: this node's beat at the start of each period, the
// read of every block at a random time within it. A host that writes old
// blocks back into a slot cannot time them between a node's write and its
// reads: this node reads its own slot back, and the peers read it, when
// nobody knows.
func (d *Disk) serve() {
	defer d.wg.Done()
	for {
		d.writeRound()
		r := rand.N(d.cfg.Interval)
		select {
		case <-d.quit:
			return
		case <-d.clk.After(r):
		}
		d.readRound()
		select {
		case <-d.quit:
			return
		case <-d.clk.After(d.cfg.Interval - r):
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

// window is how recent a block of this node a peer's block must echo to
// count as written now: the peer reads this node's block within its
// period (plus an I/O of up to Timeout), writes the echo within the next
// one, and this node reads it within its own period.
func (d *Disk) window(peerPeriod time.Duration) time.Duration {
	return d.cfg.Timeout + 2*d.cfg.Interval + 2*min(max(peerPeriod, 0), d.cfg.Timeout)
}

// maxWindow bounds window (the history kept).
func (d *Disk) maxWindow() time.Duration { return 3*d.cfg.Timeout + 2*d.cfg.Interval }

// freshLocked reports whether bt echoes a block this node wrote in this
// run within the window.
func (d *Disk) freshLocked(bt Beat, now time.Time) bool {
	s, ok := bt.SeenOf(d.slot)
	if !ok || s.Run != d.cfg.Run || s.Counter > d.counter {
		return false
	}
	from := now.Add(-d.window(bt.Period))
	for _, h := range d.history {
		if !h.at.Before(from) {
			return s.Counter >= h.counter
		}
	}
	return false
}

// beatLocked builds this node's next beat: its echo of every slot, the
// fences it conducts, its acknowledgements.
func (d *Disk) beatLocked(now time.Time) Beat {
	d.counter++
	d.history = append(d.history, stamp{d.counter, now})
	from := now.Add(-d.maxWindow())
	i := 0
	for i < len(d.history)-1 && d.history[i].at.Before(from) {
		i++
	}
	d.history = d.history[i:]
	bt := Beat{Writer: d.cfg.Node, Slot: d.slot, Run: d.cfg.Run, Counter: d.counter, Time: now, State: d.state, Period: d.cfg.Interval, Guard: d.cfg.Guard}
	for i, m := range d.cfg.Members {
		if v := d.peers[m]; v != nil && v.seen {
			bt.Seen = append(bt.Seen, Seen{Slot: i, Run: v.run, Counter: v.count})
		}
	}
	for _, m := range slices.Sorted(maps.Keys(d.fences)) {
		f := d.fences[m]
		if f.ended || d.lost {
			// a node that lost the disk (or whose slot someone else
			// writes) fences nobody through it: it may be the one fenced
			continue
		}
		f.run = max(d.peers[f.target].run, f.netRun)
		bt.Fences = append(bt.Fences, Announce{Slot: f.slot, Run: f.run, Nonce: f.nonce})
	}
	if d.acked {
		for _, s := range slices.Sorted(maps.Keys(d.fencesIn)) {
			bt.Acks = append(bt.Acks, Ack{Slot: s, Nonce: d.fencesIn[s]})
		}
	}
	return bt
}

// writeBeat writes this node's next beat; the fences it announces count
// as announced from then on.
func (d *Disk) writeBeat(now time.Time) error {
	d.mu.Lock()
	bt := d.beatLocked(now)
	b := d.keys.EncodeBeat(bt)
	d.mu.Unlock()
	err := d.io(func() error {
		_, err := d.dev.WriteAt(b, BeatOffset(d.slot))
		return err
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.written = bt.Counter
	for _, a := range bt.Fences {
		f := d.fences[d.cfg.Members[a.Slot]]
		if f != nil && !f.ended && f.announced.IsZero() {
			f.announced = d.clk.Now()
			d.log.Warn("disk heartbeat: fence announced in this node's beat", zap.String("target", f.target), zap.Uint64("run", f.run))
		}
	}
	d.mu.Unlock()
	return nil
}

// writeRound is the first half of a period: this node's beat, then the
// records of its fences in the targets' fence blocks (and the clearing of
// those of the fences that ended).
func (d *Disk) writeRound() {
	now := d.clk.Now()
	werr := d.writeBeat(now)
	if werr != nil {
		d.logErr("write", "write of this node's slot failed", werr)
	}
	d.mu.Lock()
	d.werr = werr
	d.mu.Unlock()
	d.writeRecords(now)
}

// readRound is the second half: one read of every block, followed, then
// the disk's state and the fences in progress.
func (d *Disk) readRound() {
	now := d.clk.Now()
	n := len(d.cfg.Members)
	buf := make([]byte, 2*n*BlockSize)
	var got int
	rerr := d.io(func() error {
		var err error
		got, err = d.dev.ReadAt(buf, 0)
		return err
	})
	tamper := false
	if rerr != nil && !isEOF(rerr) {
		d.logErr("read", "read of the slots failed", rerr)
	} else {
		buf = buf[:got] // beyond the end of a file: never written
		if rerr, tamper = d.follow(buf, now); rerr != nil {
			d.logErr("readback", "this node's slot does not read back what it wrote (a disk that returns old blocks, or another writer): the disk is counted lost until it reads back right for hb.disk.timeout", rerr)
		}
	}
	d.mu.Lock()
	var change *bool
	reason := ""
	werr := d.werr
	good := werr == nil && rerr == nil
	if tamper {
		d.tampered = now
	}
	if good {
		d.lastGood = now
	}
	held := !d.tampered.IsZero() && now.Sub(d.tampered) < d.cfg.Timeout
	end := d.clk.Now()
	switch {
	case d.lost && good && !held:
		d.lost = false
		t := true
		change = &t
	case !d.lost && (held || end.Sub(d.lastGood) >= d.cfg.Timeout):
		// at the end of the round: an I/O that blocked for Timeout makes
		// the disk lost at once (within Timeout + one period of the last
		// good round's start); a slot rewritten by someone else at once
		d.lost = true
		f := false
		change = &f
		if held {
			reason = "this node's slot was rewritten by someone else"
			if rerr != nil {
				reason += ": " + rerr.Error()
			}
		} else {
			reason = fmt.Sprintf("no good disk round for %s", end.Sub(d.lastGood).Round(time.Millisecond))
			if werr != nil {
				reason += ": " + werr.Error()
			} else if rerr != nil {
				reason += ": " + rerr.Error()
			}
		}
	}
	if !good || d.lost {
		d.doubt = end
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

// follow reads the blocks: the peers' beats (advances, fences announced,
// acks) and the fence blocks. It returns an error when this node's own
// beat block does not read back as last written (the round is then not
// good: a disk that returns old blocks would hide this node's stall from
// the fencers), and tamper when it reads back another block than it
// wrote although its write succeeded (someone else writes its slot).
func (d *Disk) follow(buf []byte, now time.Time) (own error, tamper bool) {
	var advanced []string
	var fenced *Fence
	d.mu.Lock()
	for i, m := range d.cfg.Members {
		if m == d.cfg.Node {
			tamper, own = d.readBackLocked(block(buf, BeatOffset(i)), i)
			continue
		}
		v := d.peers[m]
		v.fenceBy = ""
		if f, err := d.keys.DecodeFence(block(buf, FenceOffset(i)), i); err == nil {
			v.fenceBy = f.Fencer
		} else if errors.Is(err, ErrNotOwnKey) {
			d.notOwnKey++
			d.logErrLocked("fence:"+m+":"+kindOf(err), "a peer's fence block is not its fencer's (ignored)", err, zap.String("peer", m), zap.Int("slot", i))
		}
		bt, err := d.keys.DecodeBeat(block(buf, BeatOffset(i)), i)
		if err == nil && bt.Writer != m {
			err = fmt.Errorf("%w: written by %q, the slot of %s", ErrWrongSlot, bt.Writer, m)
		}
		if err != nil {
			if errors.Is(err, ErrNotOwnKey) {
				d.notOwnKey++
			}
			if !errors.Is(err, ErrEmpty) {
				d.logErrLocked("beat:"+m+":"+kindOf(err), "a peer's slot is unreadable (not counted alive)", err, zap.String("peer", m), zap.Int("slot", i))
			}
			v.err = err.Error()
			continue
		}
		if v.seen && (bt.Run < v.run || bt.Run == v.run && bt.Counter < v.count) {
			// an older block than the newest read: written back by
			// someone (a replay), or a disk that returns old blocks; it
			// says nothing of the peer (no life, no state, no ack, no
			// fence)
			v.err = fmt.Sprintf("an older block (run %d counter %d) than the newest read (run %d counter %d): written back by someone, counted for nothing", bt.Run, bt.Counter, v.run, v.count)
			d.logErrLocked("beat:"+m+":replay", "a peer's slot holds an older block than the newest read (written back by someone?): counted for nothing", nil, zap.String("peer", m), zap.Int("slot", i),
				zap.Uint64("run", bt.Run), zap.Uint64("counter", bt.Counter), zap.Uint64("newest_run", v.run), zap.Uint64("newest_counter", v.count))
			continue
		}
		v.err = ""
		if v.seen && bt.Run == v.run && bt.Counter == v.count {
			continue // the same block again
		}
		first := !v.seen
		v.seen, v.run, v.count, v.beat = true, bt.Run, bt.Counter, bt
		v.fresh = d.freshLocked(bt, now)
		if !v.fresh {
			// no echo of a recent block of this run: a block recorded
			// earlier (or written before this run): no sign of life
			continue
		}
		if !first {
			v.lastAdvance = now
			advanced = append(advanced, m)
		}
		for _, a := range bt.Fences {
			if a.Slot != d.slot || a.Run != d.cfg.Run {
				continue
			}
			d.fencesIn[i] = a.Nonce
			if !d.obeyed {
				d.obeyed = true
				fenced = &Fence{Cluster: d.cfg.Cluster, Fencer: m, Target: d.cfg.Node, Slot: d.slot, TargetRun: a.Run, Nonce: a.Nonce, Time: bt.Time}
			}
		}
	}
	d.ownFenceLocked(block(buf, FenceOffset(d.slot)), d.slot)
	d.mu.Unlock()
	if d.cfg.Liveness != nil {
		for _, m := range advanced {
			d.cfg.Liveness.NoteLinkAlive(m, LinkName)
		}
	}
	if fenced != nil {
		d.log.Error("fence announced by its fencer against this node's run: running crash_command", zap.String("fencer", fenced.Fencer), zap.Uint64("run", fenced.TargetRun))
		if d.cfg.OnFenced != nil {
			d.cfg.OnFenced(*fenced)
		}
	}
	return own, tamper
}

// readBackLocked checks this node's own beat block: it must be the last
// one written.
func (d *Disk) readBackLocked(b []byte, slot int) (tamper bool, err error) {
	bt, err := d.keys.DecodeBeat(b, slot)
	switch {
	case d.written == 0:
		// nothing written yet in this run: nothing to read back
		return false, nil
	case err != nil:
		if errors.Is(err, ErrNotOwnKey) {
			d.notOwnKey++
		}
		return true, fmt.Errorf("own slot: %w", err)
	case bt.Writer != d.cfg.Node || bt.Run != d.cfg.Run || bt.Counter != d.written:
		return true, fmt.Errorf("own slot reads back %s run %d counter %d, wrote run %d counter %d", bt.Writer, bt.Run, bt.Counter, d.cfg.Run, d.written)
	}
	return false, nil
}

// ownFenceLocked reads this node's fence block: a record only. A fence
// aimed at this run that no fencer's beat announces (left over, or
// written back by someone) is logged once and ignored.
func (d *Disk) ownFenceLocked(b []byte, slot int) {
	f, err := d.keys.DecodeFence(b, slot)
	switch {
	case errors.Is(err, ErrEmpty):
	case err != nil:
		if errors.Is(err, ErrNotOwnKey) {
			d.notOwnKey++
		}
		d.logErrLocked("fence:"+d.cfg.Node+":"+kindOf(err), "this node's fence block is unreadable (ignored: no fence)", err, zap.Int("slot", slot))
	case f.Target != d.cfg.Node:
		d.logErrLocked("fence:"+d.cfg.Node+":target", "this node's fence block names another target (ignored)", nil, zap.String("target", f.Target))
	case f.TargetRun != d.cfg.Run:
		// aimed at an earlier run: this run ignores it
	default:
		fs := slices.Index(d.cfg.Members, f.Fencer)
		if n, ok := d.fencesIn[fs]; ok && n == f.Nonce {
			return // announced
		}
		d.logErrLocked("fence:"+d.cfg.Node+":unannounced", "a fence block aimed at this run that its fencer's beat does not announce (left over, or written back by someone): ignored", nil,
			zap.String("fencer", f.Fencer), zap.Uint64("run", f.TargetRun))
	}
}

func kindOf(err error) string {
	for _, e := range []error{ErrTruncated, ErrGarbage, ErrVersion, ErrOtherCluster, ErrChecksum, ErrMalformed, ErrWrongSlot, ErrNotOwnKey} {
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

// FenceOpts are the terms of a fence (Disk.Fence).
type FenceOpts struct {
	// Wait is how long the target's slot must not advance for the stall
	// to count (when it may count: guard).
	Wait time.Duration
	// Run is the target's run its network beats last came from (0: not
	// known): the fence is aimed at the newer of it and the newest run
	// read in the target's slot, so that a block of an earlier run (a
	// "stopped" one, a guard of another node.toml) says nothing of it.
	Run uint64
	// Stops: the target's data over the network says it stops by itself
	// when it loses the disk and the majority (its split_action stop,
	// crash or reboot). Counted only for a run of which the disk showed
	// no block: the target's own beats say it otherwise.
	Stops bool
}

// Fence fences target through the disk: this node's beat announces a
// fence aimed at the target's current run (and a record of it goes into
// the target's fence block), and Fence returns once the target's slot
// acknowledges this fence's nonce (it read the fence, and its services
// are stopped), or once its slot has not advanced for o.Wait while this
// node's own rounds were good (stallFrom), provided the target stops by
// itself without the disk (guard): it then either obeyed and went down,
// or lost the disk longer than it may run without it. It returns an
// error when ctx ends first, when the target's newest beat of the run
// fenced says its daemon stopped on purpose (its services may run,
// nobody reads its fences), or when this node's disk writes fail.
func (d *Disk) Fence(ctx context.Context, target string, o FenceOpts) (how string, err error) {
	slot := slices.Index(d.cfg.Members, target)
	if slot < 0 || target == d.cfg.Node {
		return "", fmt.Errorf("%s has no slot to fence", target)
	}
	f := &fenceReq{target: target, slot: slot, wait: o.Wait, netRun: o.Run, netStops: o.Stops, created: d.clk.Now(), done: make(chan string, 1)}
	if _, err := crand.Read(f.nonce[:]); err != nil {
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
			d.clear[slot] = true
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
	if d.lost {
		return "this node's disk is lost: it announces no fence"
	}
	if f.announced.IsZero() {
		return "the fence could not be announced on the disk yet"
	}
	v := d.peers[f.target]
	why := fmt.Sprintf("no acknowledgement, and %s's slot advanced %s ago (the fence needs %s without an advance, with this node's disk rounds good)",
		f.target, d.clk.Now().Sub(d.stallFrom(v, f)).Round(time.Millisecond), f.wait)
	if f.unguarded != "" {
		why = fmt.Sprintf("no acknowledgement, and %s's slot has not advanced for %s, but %s", f.target,
			d.clk.Now().Sub(d.stallFrom(v, f)).Round(time.Millisecond), f.unguarded)
	}
	if v.err != "" {
		why += "; its slot: " + v.err
	}
	return why
}

// stallFrom is when the stall of the target's slot counts from: its last
// sign of life seen (an advance echoing a recent block of this node), but
// no earlier than the fence's announcement (a target that lost the disk
// long ago reacts to it only once it also lost the majority, around the
// time it was declared down and the fence began), nor than this node's
// start of the disk heartbeat (an old block proves nothing), nor than
// this node's last round that was not good (its view of the slot had a
// gap, or someone rewrites its own slot: what it reads may be a lie).
func (d *Disk) stallFrom(v *slotView, f *fenceReq) time.Time {
	t := f.announced
	for _, u := range []time.Time{f.created, d.start, v.lastAdvance, d.doubt} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// writeRecords writes the record of each fence in progress into its
// target's fence block (again when the run aimed at changed), and clears
// the records of the fences that ended, when the block still holds this
// node's.
func (d *Disk) writeRecords(now time.Time) {
	type op struct {
		slot int
		b    []byte
		f    *fenceReq
		run  uint64
	}
	var todo []op
	d.mu.Lock()
	for _, f := range d.fences {
		if f.ended || f.announced.IsZero() || f.recorded == f.run+1 {
			continue
		}
		b := d.keys.EncodeFence(Fence{Fencer: d.cfg.Node, Target: f.target, Slot: f.slot, TargetRun: f.run, Nonce: f.nonce, Time: now})
		todo = append(todo, op{slot: f.slot, b: b, f: f, run: f.run})
	}
	for slot := range d.clear {
		if d.fences[d.cfg.Members[slot]] != nil || d.peers[d.cfg.Members[slot]].fenceBy != d.cfg.Node {
			delete(d.clear, slot) // fenced again, or no longer this node's record
			continue
		}
		todo = append(todo, op{slot: slot, b: make([]byte, BlockSize)})
	}
	d.mu.Unlock()
	for _, o := range todo {
		err := d.io(func() error {
			_, err := d.dev.WriteAt(o.b, FenceOffset(o.slot))
			return err
		})
		d.mu.Lock()
		switch {
		case err != nil:
			d.logErrLocked("fencewrite:"+d.cfg.Members[o.slot], "write of a fence block failed (retried next period)", err, zap.String("target", d.cfg.Members[o.slot]))
		case o.f != nil:
			o.f.recorded = o.run + 1
		default:
			delete(d.clear, o.slot)
			d.peers[d.cfg.Members[o.slot]].fenceBy = ""
		}
		d.mu.Unlock()
	}
}

// checkFences ends the fences acknowledged or whose target's slot stalled.
func (d *Disk) checkFences(now time.Time) {
	for _, f := range d.fences {
		if f.ended || f.announced.IsZero() {
			continue
		}
		v := d.peers[f.target]
		if v.seen && v.fresh && v.beat.Run == f.run && slices.Contains(v.beat.Acks, Ack{Slot: d.slot, Nonce: f.nonce}) {
			d.endFence(f, fmt.Sprintf("acknowledged by %s (fence read, crash_command run)", f.target))
			continue
		}
		if d.lost {
			continue // no stall is counted while this node's disk is lost
		}
		from := d.stallFrom(v, f)
		if now.Sub(from) < f.wait {
			continue
		}
		if v.seen && v.beat.Run == f.run && v.beat.State == StateStopped {
			d.endFence(f, "!"+f.target+"'s slot says its daemon was stopped on purpose (its services may still run, nobody reads its fences): the disk cannot fence it")
			continue
		}
		guard, unguarded := d.guardLocked(v, f)
		if unguarded != "" {
			if f.unguarded == "" {
				d.log.Warn("disk heartbeat: the target's slot stalled, but the stall proves nothing: waiting for its acknowledgement",
					zap.String("target", f.target), zap.Uint64("run", f.run), zap.String("why", unguarded))
			}
			f.unguarded = unguarded
			continue
		}
		d.endFence(f, fmt.Sprintf("%s's slot has not advanced for %s (%s)", f.target, now.Sub(from).Round(time.Millisecond), guard))
	}
}

// guardLocked says whether a stall of the target's slot proves that it
// does not run its services: only when the target stops by itself once it
// lost the disk and the majority (its split_action, which a node that
// cannot read the disk applies, docs/operations.md), by its own word: the
// guard of its newest block of the run fenced, or, when the disk showed
// no block of that run, its data over the network. guard says why the
// stall counts; unguarded, when it does not, why.
func (d *Disk) guardLocked(v *slotView, f *fenceReq) (guard, unguarded string) {
	if v.seen && v.run == f.run {
		if v.beat.Guard&GuardStops == 0 {
			return "", fmt.Sprintf("its beats of run %d say it does not stop by itself without the disk (split_action disabled, or hb.disk.fence off there): a stalled slot proves nothing of its services", f.run)
		}
		if v.beat.Guard&GuardWatchdog != 0 {
			return "it stops by itself without the disk, its beats say, and its watchdog is armed", ""
		}
		return "it stops by itself without the disk, its beats say; it has no watchdog", ""
	}
	if f.netStops {
		return fmt.Sprintf("no block of its run %d read; it stops by itself without the disk, its data over the network says", f.run), ""
	}
	return "", fmt.Sprintf("no block of its run %d was read, and its data over the network does not say it stops by itself (split_action disabled, or unknown): a stalled slot proves nothing of its services", f.run)
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

// NotOwnKey is how many reads of a slot refused a block not
// authenticated with its writer's node key (a beat in a member's slot, or
// a fence record, written by another holder of the secret).
func (d *Disk) NotOwnKey() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.notOwnKey
}

// Reachable reports whether the disk had a good round within Timeout (and
// no block written by someone else in this node's slot within Timeout).
func (d *Disk) Reachable() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.lost
}
