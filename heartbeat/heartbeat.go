package heartbeat

import (
	"crypto/ecdh"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/internal/clock"
)

// Defaults of node.toml [hb].
const (
	DefaultTimeout  = 15 * time.Second
	DefaultInterval = 5 * time.Second
)

// Config configures one node's heartbeat.
type Config struct {
	// Node is the local node name; it must be one of Members.
	Node string
	// BindAddr and BindPort are where the real transport listens
	// (node.toml hb.addr / hb.port). A zero BindPort takes the port of the
	// local entry of Members.
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort are what memberlist announces; empty
	// means the host:port of the local entry of Members.
	AdvertiseAddr string
	AdvertisePort int
	// Members are every cluster member (cluster.toml [nodes]), self included.
	Members []config.Member
	// ClusterName binds all traffic to the cluster (memberlist Label).
	ClusterName string
	// Secret is the cluster secret: 64 hex characters (32 bytes). The real
	// transport derives its AES-256-GCM keys from it (HKDF-SHA256); the
	// secret itself is never a key and never logged. NewMemberlist refuses
	// "" unless Insecure is set.
	Secret string
	// NodeKey is this node's private key (node.key) and MemberKeys the
	// members' public keys (cluster.toml [node_keys]): frames between this
	// node and a member with a key are sealed with their pairwise key
	// (pairkeys.go), as NodeKeysMode says ("" is "require": every member
	// has a key, and a frame sealed with the cluster secret alone is
	// refused). nil: the cluster secret alone. MemNetwork ignores them.
	NodeKey      *ecdh.PrivateKey           `json:"-"`
	MemberKeys   map[string]*ecdh.PublicKey `json:"-"`
	NodeKeysMode string
	// Insecure lets NewMemberlist run without a Secret (tests only): the
	// keys then derive from a fixed label and the cluster name, which
	// detects damaged frames and other clusters but stops no attacker. A
	// WARN says so at start. MemNetwork ignores it.
	Insecure bool
	// Incarnation identifies this run of the node. It must be strictly
	// greater than that of every earlier run of the node (the daemon
	// persists it): peers drop frames of older runs and accept a newer run
	// only once it answered a challenge. 0 means Clock.Now() in nanoseconds.
	Incarnation uint64
	// Timeout: a peer silent this long is declared down (hb.timeout).
	Timeout time.Duration
	// Interval is the beat period (hb.interval): a small beat (incarnation,
	// generation, digest of the data) goes to every member this often, or
	// every Timeout/3 if that is shorter (config.BeatPeriod). Full copies
	// go only on demand.
	Interval time.Duration
	// Clock is the time source; nil means the wall clock.
	Clock clock.Clock
	// Mute, when set and true, holds every frame this node would send:
	// the daemon's event loop stopped (wedged), so that its peers see it
	// dead instead of alive with its services ended by its guard. Called
	// on every send, under the heartbeat's lock: it must be cheap.
	Mute func() bool `json:"-"`
	// Logger receives the heartbeat's and memberlist's logs (the caller
	// names it, e.g. "hb"); nil discards. Up, Down and Rejected are logged
	// at debug level only: they are events, and the owner logs them.
	Logger *zap.Logger
}

// Heartbeat carries the local node's dataset to its peers and reports theirs.
// All methods are safe for concurrent use and never block on the network.
type Heartbeat interface {
	// Publish sets the local node's data. The caller bumps n.Gen on every
	// change (the heartbeat forces it monotonic anyway). The change is sent
	// at once to every live peer as a delta.
	Publish(n dataset.Node)
	// Events delivers peer events in order. It is closed by Close. Events
	// are never dropped: when the channel is full they wait in a backlog.
	Events() <-chan Event
	// Peers returns every other member, sorted by name.
	Peers() []Peer
	// Stats returns the traffic counters.
	Stats() Stats
	// Ask sends a request (op, body: JSON) to a member that is up and
	// returns its id; the answer comes as an Answered event with that id,
	// or never (the caller keeps its own deadline).
	Ask(to, op string, body json.RawMessage) (uint64, error)
	// Answer answers the Asked event id of member to (errText set: a
	// failure).
	Answer(to string, id uint64, body json.RawMessage, errText string)
	// NoteLinkAlive tells that peer was heard just now on link (a link
	// outside the network, such as the disk heartbeat: no data): it
	// refreshes the peer's liveness as a fresh beat does (bringing it up),
	// and the link is tracked and reported (Peer.Links, LinkDown, LinkUp)
	// like a network link. The caller calls it only on real progress (a
	// counter of the peer that advanced). Unknown peers, the names of
	// network links (net1...) and "" are ignored.
	NoteLinkAlive(peer, link string)
	// Acked returns the newest message of this node that peer
	// acknowledged in one of its beats, and when this node sent it (its
	// clock); false when none yet (echo.go).
	Acked(peer string) (Ack, bool)
	// AckedNotify is signalled each time a peer acknowledged a newer
	// message of this node than it had (Acked moved): a buffer of one,
	// never blocking the heartbeat, so signals not taken yet coalesce.
	// A lease anchored on the acknowledgements is looked at when it
	// fires, in step with the peers' beats (daemon/guard.go).
	AckedNotify() <-chan struct{}
	// Close flushes the last Publish to the live peers and releases the
	// transport.
	Close() error
}

// Kind is the kind of an Event.
type Kind int

const (
	// Data: the peer's dataset changed, or, once after an Up, a message
	// of the peer confirmed that the copy held is current; Event.Data is
	// its merged full copy.
	Data Kind = iota + 1
	// Up: a message of the peer was heard after it was down or unknown.
	Up
	// Down: nothing was heard from the peer for Timeout.
	Down
	// Rejected: traffic from outside the cluster (wrong secret, wrong
	// cluster name, unknown member), a replayed or stale frame, a frame of
	// a member from another address than its configured one, or a
	// malformed message was rejected. Event.Node is the member name when
	// authenticated, else the remote address (Event.Addr). Rate-limited:
	// at most one per source and reason per 10s, 20 per 10s in all.
	Rejected
	// Impostor: a frame authenticated under this node's own name came from
	// a later run than ours, at Event.Addr, or a peer's beat lists this
	// node among the names it hears two runs of: another daemon runs with
	// this node's name (a copied configuration, a cloned host). The owner should log an error
	// and stay out of orchestration. Rate-limited like Rejected.
	Impostor
	// Asked: a member asks something (Event.ID, Op, Body); the owner
	// answers with Heartbeat.Answer, off its event loop if it is slow.
	Asked
	// Answered: the answer to our Ask Event.ID (Body; Reason when it
	// failed).
	Answered
	// Unseen: the members the peer declared down (heard, then silent for
	// its Timeout) changed, as carried by its beats; Event.Unseen is the
	// new list; the first beat heard of the peer in this run says it even
	// when empty. Sent after the peer's Up.
	Unseen
	// Stale: the peer is heard, but the copy of its data held has stayed
	// behind the generation its beats announce for Timeout (its data is
	// lost on the way); Reason says how far. The owner must not trust
	// the copy: the instances there are unknown. Ends with Fresh, or Down.
	Stale
	// Fresh: the copy of a stale peer caught up with what it announces;
	// a Data event with the current copy follows.
	Fresh
	// Duplicate: two runs of the peer send at once (two daemons with its
	// name and address: a cloned host); Reason says which. The owner must
	// treat the peer as unknown, not down, while it lasts, and log an
	// error. The duplicated names go in this node's beats, so that the
	// twins learn it (an Impostor event there).
	Duplicate
	// DuplicateGone: no two runs of the peer were heard at once for
	// Timeout; a Data event with the copy held follows (peer up).
	DuplicateGone
	// LinkDown: link Event.Link to the peer (address Event.Addr) was
	// silent for Timeout while the peer is heard on another link: an
	// alarm, the peer stays up. Reason says how long and how many links
	// remain. Only for peers with several links.
	LinkDown
	// LinkUp: a link reported down carries the peer's frames again.
	LinkUp
	// Silent: a live peer was silent for a beat and a half (the first sign
	// of its loss, when the probes begin: silence.go); said once per
	// silence. Ends with Heard, or Down. Not news for the node core: the
	// owner may begin work that a failover of the peer would need (the
	// duplicate-address probe of its VIPs), never act on it.
	Silent
	// Heard: a Silent peer was heard again before it was declared down
	// (never after a Down: a peer back from down is an Up).
	Heard
	// RunHeld: a new run of the peer was confirmed while another run of
	// it was heard sending lately (a restart, or a cloned host: newrun.go);
	// Reason says which. The owner takes its data but must count its
	// instances as unknown, not down, until RunTrusted (or Down).
	RunHeld
	// RunTrusted: no other run of a held peer was heard for long enough;
	// a Data event with the copy held follows.
	RunTrusted
	// LinkDegraded: link Event.Link to the peer passes its beats but not
	// this node's data (the peer said its copy is behind, and that the
	// data sent over the link did not reach it there): an alarm, the data
	// goes over the other links. Reason says why. Several links only.
	LinkDegraded
	// LinkRepaired: a degraded link carries data again.
	LinkRepaired
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Up:
		return "up"
	case Down:
		return "down"
	case Rejected:
		return "rejected"
	case Impostor:
		return "impostor"
	case Asked:
		return "asked"
	case Answered:
		return "answered"
	case Unseen:
		return "unseen"
	case Stale:
		return "stale"
	case Fresh:
		return "fresh"
	case Duplicate:
		return "duplicate"
	case DuplicateGone:
		return "duplicate_gone"
	case LinkDown:
		return "link_down"
	case LinkUp:
		return "link_up"
	case Silent:
		return "silent"
	case Heard:
		return "heard"
	case RunHeld:
		return "run_held"
	case RunTrusted:
		return "run_trusted"
	case LinkDegraded:
		return "link_degraded"
	case LinkRepaired:
		return "link_repaired"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Event is what the heartbeat reports to its owner.
type Event struct {
	Kind Kind
	Node string
	// Data is set on Data events: the peer's whole data, which the
	// receiver may keep but must not modify (nor any map or value it
	// holds): it shares the entries that did not change with the copies
	// of the peer's earlier and later Data events. The heartbeat never
	// modifies it after the event either (copy on write, cow.go).
	Data *dataset.Node
	// Changes, on a Data event, says what Data changed since the Data of
	// the peer's previous Data event (Changes.Base); nil when not known
	// (a full copy came): take Data as a whole. A receiver that did not
	// take the event of Base takes Data as a whole too.
	Changes *dataset.Changes
	// Reason explains Rejected and Impostor events.
	Reason string
	// Addr is the remote address of Rejected and Impostor events, when
	// known.
	Addr string
	// ID, Op and Body are those of Asked and Answered events.
	ID   uint64
	Op   string
	Body json.RawMessage
	// Unseen is set on Unseen events: the members the peer declared down.
	Unseen []string
	// Link is the link of LinkDown and LinkUp events (net1, net2, disk).
	Link string
}

// Peer is the heartbeat's view of another member.
type Peer struct {
	Name      string
	Addr      string
	Up        bool
	LastHeard time.Time // zero when never heard
	Gen       uint64    // generation of the peer's data we hold
	// Run is the run (incarnation) of the last authenticated frame heard
	// from the peer, 0 when never heard: the disk fences that run.
	Run uint64
	// Stale: the copy held stayed behind AnnouncedGen (the newest
	// generation its beats announced) for Timeout (a Stale event).
	// BehindSince is when it fell behind, zero when it is current.
	Stale        bool
	AnnouncedGen uint64
	BehindSince  time.Time
	// Duplicate: two runs of the peer are alive at once (a Duplicate
	// event).
	Duplicate bool
	// Links are the links to the peer (links.go): its network links in
	// cluster.toml order, then those of NoteLinkAlive.
	Links []LinkStatus
}

// Stats are traffic counters since start.
type Stats struct {
	Sent, Received             uint64 // messages
	BytesSent, BytesReceived   uint64 // payload bytes (before encryption)
	FullsSent, DeltasSent      uint64
	NeedsSent                  uint64 // requests for a full copy after a gap
	Rejected                   uint64 // malformed, foreign, unauthenticated, replayed, misaddressed
	Replayed                   uint64 // of which duplicates, beyond the replay window, or of an earlier run
	WrongSource                uint64 // of which authenticated but not from the sender's configured address
	NotOwnKey                  uint64 // of which not sealed with the node key of the member they claim to be from (per-node keys)
	StreamsRefused             uint64 // inbound connections closed before authentication (no member's address, over budget, empty)
	Unconfirmed                uint64 // frames of a run not yet proved alive (dropped, answered by a challenge)
	Dropped                    uint64 // sends dropped on a full peer queue
	SendErrors                 uint64
	DeltasApplied, FullsMerged uint64
	// DigestMismatches counts beats whose digest differed from the copy
	// held at the same generation (each asks for a full copy).
	DigestMismatches uint64
	// ProbesSent counts the beats asking a silent peer for a beat at once;
	// ProbesAnswered the beats sent back for a peer's probe.
	ProbesSent, ProbesAnswered uint64
	// BeatsInStep counts the rounds of beats sent early, on a peer's beat
	// (see beatInStepLocked).
	BeatsInStep uint64
	// Stalls counts the times this node did not run for more than a beat
	// period and a quarter (stall.go), Stalled their total: left out of
	// its peers' silences.
	Stalls  uint64
	Stalled time.Duration
}

// settings is a validated Config with the derived periods.
type settings struct {
	Config
	key  []byte        // nil without a secret
	beat time.Duration // beat period: config.BeatPeriod, at least 10ms
	// gapWait is how long a gap may stay open (a frame merely reordered)
	// before a full copy is asked for, and how soon after a Publish a
	// trailing beat shows the new generation (so that a lost delta is
	// noticed without waiting for the next beat): beat/10 within [10ms, 100ms].
	gapWait time.Duration
}

func (cfg Config) validate() (settings, error) {
	s := settings{Config: cfg}
	if s.Node == "" {
		return s, errors.New("heartbeat: empty node name")
	}
	self := false
	seen := map[string]bool{}
	for _, m := range s.Members {
		if m.Name == "" || seen[m.Name] {
			return s, fmt.Errorf("heartbeat: empty or duplicate member name %q", m.Name)
		}
		seen[m.Name] = true
		if m.Name == s.Node {
			self = true
		}
	}
	if !self {
		return s, fmt.Errorf("heartbeat: node %q is not in the members", s.Node)
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	if s.Interval >= s.Timeout {
		return s, fmt.Errorf("heartbeat: interval %s must be shorter than timeout %s", s.Interval, s.Timeout)
	}
	if len(s.ClusterName) > 255 {
		return s, errors.New("heartbeat: cluster name longer than 255 bytes")
	}
	if s.Secret != "" {
		k, err := hex.DecodeString(s.Secret)
		if err != nil || len(k) != 32 {
			// Never echo the secret, not even in part.
			return s, errors.New("heartbeat: cluster secret must be 64 hex characters (32 bytes)")
		}
		s.key = k
	}
	if err := s.checkNodeKeys(); err != nil {
		return s, err
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = zap.NewNop()
	}
	s.beat = max(10*time.Millisecond, config.BeatPeriod(config.HBConfig{Timeout: s.Timeout, Interval: s.Interval}))
	s.gapWait = max(10*time.Millisecond, min(100*time.Millisecond, s.beat/10))
	return s, nil
}

// self returns the local member entry.
func (s *settings) self() config.Member {
	for _, m := range s.Members {
		if m.Name == s.Node {
			return m
		}
	}
	return config.Member{}
}
