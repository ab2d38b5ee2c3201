package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"haven/dataset"
	"haven/fsutil"
)

// durable is what survives a daemon restart, written atomically to
// R/var/state.json on every change of any of its fields.
type durable struct {
	// Lamport is the node's logical clock for targets and config versions.
	Lamport    uint64                    `json:"lamport"`
	NodeFrozen bool                      `json:"node_frozen"`
	Services   map[string]durableService `json:"services"`
	// Tombstones remember deleted services so that older copies of their
	// config still travelling between nodes never resurrect them.
	Tombstones map[string]dataset.Version `json:"tombstones,omitempty"`
	// Cluster is the multi-node cluster this node was a member of.
	Cluster *clusterIdentity `json:"cluster,omitempty"`
}

type durableService struct {
	Frozen bool `json:"frozen"`
	// LocalExpect is "started" when the daemon (or an admin) started the
	// instance, so that a restarted daemon knows what it was running.
	LocalExpect string         `json:"local_expect,omitempty"`
	Target      dataset.Target `json:"target,omitempty"`
	// ConfigVersion orders config edits across the cluster.
	ConfigVersion dataset.Version `json:"config_version"`
	// ConfigDigest is dataset.ConfigDigest of the file installed at
	// ConfigVersion: a file that no longer matches it was changed outside
	// Haven. ConfigIncludes is the entry's dataset.ConfigEntry.Includes.
	ConfigDigest   string            `json:"config_digest,omitempty"`
	ConfigIncludes map[string]uint64 `json:"config_includes,omitempty"`
	// StartFailed survives a restart so a failed node does not retry blindly.
	StartFailed bool `json:"start_failed,omitempty"`
	// Clear is the newest clear request known (applied once, relayed).
	Clear dataset.ClearRequest `json:"clear,omitempty"`
}

func loadDurable(path string) (durable, error) {
	d := durable{Services: map[string]durableService{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("%s: corrupt state file: %w", path, err)
	}
	if d.Services == nil {
		d.Services = map[string]durableService{}
	}
	return d, nil
}

func encodeDurable(d durable) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	return append(b, '\n'), err
}

// persister writes the durable state off the event loop, so that a slow
// fsync never stalls heartbeats, decisions or the API. The loop hands it
// each new state (already encoded) with a sequence number; only the newest
// pending one is written. API answers wait until the state they changed is
// on disk (wait), so nothing an admin was told is lost on a crash.
type persister struct {
	path    string
	onError func(error)

	mu      sync.Mutex
	cond    *sync.Cond
	pending []byte
	seq     uint64 // of pending
	written uint64
	closed  bool
	done    chan struct{}
}

func newPersister(path string, onError func(error)) *persister {
	p := &persister{path: path, onError: onError, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.run()
	return p
}

// submit queues state number seq for writing (called by the loop).
func (p *persister) submit(seq uint64, data []byte) {
	p.mu.Lock()
	p.pending, p.seq = data, seq
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait blocks until state number seq (or a newer one) is on disk, or the
// persister is closed.
func (p *persister) wait(seq uint64) {
	p.mu.Lock()
	for p.written < seq && !p.closed {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// close writes what is pending, then stops.
func (p *persister) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	<-p.done
}

func (p *persister) run() {
	defer close(p.done)
	for {
		p.mu.Lock()
		for p.pending == nil && !p.closed {
			p.cond.Wait()
		}
		data, seq := p.pending, p.seq
		p.pending = nil
		closed := p.closed
		p.mu.Unlock()
		if data != nil {
			if err := fsutil.WriteAtomic(p.path, data, 0o600); err != nil {
				p.onError(err)
			}
			p.mu.Lock()
			p.written = seq
			p.mu.Unlock()
			p.cond.Broadcast()
		}
		if closed && data == nil {
			return
		}
	}
}
