package web

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"haven/dataset"
)

// statusFresh is how long a status read serves the other pages too: the
// live pages re-read it every Options.Every and at each event, and 32 of
// them would otherwise each ask the daemon's loop.
const statusFresh = 150 * time.Millisecond

// statusCache shares one status read between the pages rendered at about
// the same time. A read is shared only while no event came since: an
// event means the status changed, and the page woken by it reads anew.
type statusCache struct {
	mu  sync.Mutex
	at  time.Time
	seq uint64
	raw []byte // the status as read, copied out for each page (render cleans in place)
	err error  // or why it could not be read (shared too: a hung daemon costs one wait)
}

func (v *View) status(r *http.Request) (*dataset.ClusterStatus, error) {
	c := &v.stCache
	_, seq := v.hub.since(^uint64(0))
	c.mu.Lock()
	defer c.mu.Unlock() // one read at a time: the others wait for it and share it
	if c.at.IsZero() || c.seq != seq || time.Since(c.at) > statusFresh {
		st, err := call(r, func(ctx context.Context) (*dataset.ClusterStatus, error) { return v.opt.Source.Status(ctx) })
		var raw []byte
		if err == nil {
			raw, err = json.Marshal(st)
		}
		c.raw, c.err, c.at, c.seq = raw, err, time.Now(), seq
	}
	if c.err != nil {
		return nil, c.err
	}
	var st dataset.ClusterStatus
	if err := json.Unmarshal(c.raw, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
