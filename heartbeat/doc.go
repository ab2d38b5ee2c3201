// Package heartbeat carries each node's dataset (dataset.Node) to the other
// cluster members and tells the daemon who is up.
//
// It owns: the wire format (JSON frames: beat, full, delta, need), the
// merge of each peer's dataset from full copies and deltas, and liveness.
// It does not own the cluster dataset: it reports the peers' data as Data
// events and the daemon's loop keeps it.
//
// # Data
//
// Publish sets the local dataset. The change goes at once to every peer
// that is up as a delta (node header if changed, services and targets set or
// deleted) tagged with the generations it goes from (Base) and to (Gen).
// A receiver applies a delta only on top of Base; a delta that arrives ahead
// of its base waits (memberlist hands datagrams over LIFO under load) until
// the missing one comes.
//
// When nothing changes, nothing but a small beat travels: the incarnation,
// the generation and a digest of the data, about 100 bytes whatever the
// number of services, to
// every member every beat period: min(Interval, Timeout/3). The digest of
// a format-1 beat (what the previous release writes and checks) is the
// first 8 bytes of a SHA-256 of the data's JSON form; from format 2 it is
// the sum (mod 2^64) of one 64-bit hash per entry (the node-level fields,
// each service, target and config: digestsum.go), which the sender and
// every receiver keep up to date by rehashing only what a delta changed,
// and compute whole only for a full copy or a change of format. There is no
// periodic full copy. A full copy goes only when a peer needs one: when it
// comes up (a join, a restart, a healed partition), and when it asks
// ("need"): it saw a generation it does not hold (in a beat or a waiting
// delta) for gapWait (beat/10 within [10ms, 100ms]: a frame merely
// reordered costs nothing), or a beat of the generation it holds with
// another digest (a copy gone wrong is replaced, never kept). A beat
// follows every Publish gapWait later, so a lost delta is repaired within
// about two gapWait, not a beat period; a lost request is repeated every
// needEvery. Each start of a node has a new incarnation number, so that a
// restarted node whose Gen starts over replaces its old data. A peer whose
// beats announce a generation the copy held stays behind for Timeout (its
// data lost on the way while its beats pass) is stale: a Stale event, until
// the copy catches up (Fresh) or the peer goes down (stale.go). Nothing on
// a tick is per service: idle CPU and bytes do not grow with the data
// (docs/benchmarks-archive.md, "Idle cost").
//
// # Liveness
//
// The rule is ours, not memberlist's: a peer is up from the moment a valid
// frame of it arrives that is newer than every one heard of its run and
// timely (fresh.go: frames held back on the path and delivered late refresh
// nothing; a beat echoing one of this node's messages proves how old it is,
// echo.go), and down when nothing was heard from it for Timeout,
// measured with the Clock. The ticker wakes at the next due time (the next
// beat, a peer's Timeout, a gap's deadline), so Down lands a few
// milliseconds after Timeout of silence. Since the last frame precedes a
// crash by at most one beat period, a crash is declared between Timeout
// minus a beat and Timeout after it: the detection precision is the beat
// period (2s to 3s at hb 1s/3s, 10s to 15s with the defaults 5s/15s).
// Three beats go out per Timeout (config.BeatPeriod), and a peer silent
// for a beat and a half (noticed at the next tick) is probed: asked for a
// beat at once, at least 16 times a window, until it is heard or declared
// down. A live peer looks down only when its beats and every probe round
// trip of a Timeout are lost (at 20 % loss into every node: at most 0.04
// for the beats, times 8e-8 for the probes; the probes cost nothing while
// beats arrive). The first probe of a silence is also a Silent event
// (once per silence; Heard when the peer is heard again before its Down):
// the owner may begin what a failover would need early, such as the
// duplicate-address probe of the peer's VIPs. Beats go to every configured
// member, up or down, so two nodes that lost each other find each other
// again within a beat of the link working.
//
// # Links
//
// A member may list several addresses, one per network link (links.go):
// beats and probes go out on every link, data over one live link, and a
// peer is down only when every link was silent for Timeout; a link silent
// while the peer is heard on another is a LinkDown event (an alarm), its
// return a LinkUp. A link that passes beats but not data is a
// LinkDegraded event, and the data of a peer behind goes over every link
// (degraded.go). Freshness and replays are checked per peer run over all
// links. NoteLinkAlive adds links from outside the network (the disk
// heartbeat), which count for liveness like a fresh beat.
//
// # Transports
//
// The logic lives in one core type; transports only move bytes, so the
// in-memory tests prove the real logic.
//
//   - NewMemberlist: hashicorp/memberlist provides UDP and TCP framing,
//     joins and push/pull over our own transport (transport.go), which
//     authenticates every byte before memberlist parses any: memberlist's
//     own encryption and label are off (its encryption does not
//     authenticate its version byte; one flipped byte made it panic). Each
//     datagram and each stream record is sealed with AES-256-GCM under a
//     key derived by HKDF-SHA256 from the cluster secret, the cluster name,
//     the sender's name and its incarnation (envelope.go), or with per-node
//     keys from the secret and the X25519 agreement of the sender's and
//     the receiver's key pairs, for both names (pairkeys.go); the associated
//     data holds the envelope version, the cluster name, the sender, its
//     incarnation and a sequence number. A frame is accepted only when it
//     authenticates, comes from the sender's address in cluster.toml (IP
//     and port for datagrams, IP for streams) and is fresh: of the
//     sender's confirmed run (a newer run is first challenged and must
//     answer under its own key; older runs are dropped) and new in a
//     1024-entry replay window. Streams are records of at most 64 KiB,
//     24 MiB in all; an inbound stream must authenticate its first record
//     within Timeout/4 (1s to 10s), from a member's address, with at most
//     64 such streams waiting (16 per address); a window pushed past a
//     run's own numbers by forged frames is re-anchored at the run's answer
//     to a challenge (anchor.go). Refused traffic becomes
//     Rejected events (rate-limited: one per source and reason per 10s, 20
//     per 10s in all) and counters; a frame under our own name from a
//     later run is an Impostor event. Two runs of one member that both
//     keep sending fresh frames are two daemons with one name (a cloned
//     host): a Duplicate event, the name in our beats (a node that reads
//     its own name there gets an Impostor event), and a run shut out by
//     its twin is challenged and taken back once the twin is silent
//     (twins.go); a new run confirmed while another still sends is held
//     (RunHeld: its instances unknown) until that one is silent
//     (newrun.go). See docs/security.md.
//     Frames up to about 1.3KB go as one datagram, larger ones over TCP
//     (SendReliable), to the address in cluster.toml, through two queues
//     per peer (datagrams and streams, so that beats never wait behind a
//     slow TCP send). The core's messages do not go through memberlist's
//     delegate, which does not know who sent them: the transport hands
//     each to the core with the sender it authenticated, and a message
//     naming another sender is refused (sender.go); push/pull (on join)
//     carries a full copy, ignored for the same reason. None of
//     memberlist's periodic work runs (probes, gossip, periodic push/pull:
//     see memberlistConfig): it is our framing, not our failure detector.
//   - MemNetwork: deterministic delivery driven by the caller and a fake
//     clock, with partitions, drops and crashes, for tests and simulation.
//
// # Concurrency
//
// Heartbeat methods are safe for concurrent use and never block on the
// network: sends are queued (a full queue drops the frame and counts it; the
// next beat shows the gap and a full copy repairs). Events are delivered in order on a buffered
// channel; when it is full they wait in a backlog (Data events of one node
// coalesce there), never dropped. The real transport runs one ticker
// goroutine, one joiner goroutine and two sender goroutines per peer, all
// stopped and waited for by Close. Close flushes the queued frames (so the
// last Publish reaches the live peers, bounded by min(2s, Timeout)), shuts
// memberlist down and closes the Events channel (the peers see the node
// down after Timeout, by their own rule).
package heartbeat
