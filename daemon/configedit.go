package daemon

import (
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"haven/config/tomlfile"
	"haven/dataset"
)

// An edit accepted here (set, unset, create, edit config) is installed
// and made durable at once, then answered only when every live peer
// announces a config that descends from it (ConfigEntry.IncludesEdit).
// When a concurrent version from another node wins over it, a keyword
// edit is applied again on top of the winner as a new version (a rebase,
// at most maxRebases times); a whole-file edit cannot be merged and fails:
// "changed concurrently on NODE, retry" (exit 1). An acknowledged edit is
// thus in the content every live node holds.
//
// This works because this node's current config always includes every
// edit pending here: an edit is applied on top of the current config, and
// when a peer's version wins, the pending edits it lacks are re-applied
// at once. So any version this node makes while an edit is pending
// includes the edit, and a peer's config whose lineage holds such a
// version (Includes[this node] >= the edit's counter) includes it too.

// maxRebases bounds how many times one keyword edit is re-applied on top
// of concurrent versions before it fails as "changed concurrently".
const maxRebases = 10

// pendingEdit is an edit made here that the live peers have not all
// adopted yet.
type pendingEdit struct {
	// op is "set" or "unset" with kws; "" for a whole-file edit.
	op  string
	kws []string
	// counter is this node's counter of the version that last applied it.
	counter  uint64
	rebases  int
	deadline time.Time
	// done answers the client (on the loop); finished stops the timer.
	done     func(any, error)
	finished chan struct{}
}

// confirmTimeout bounds the wait for the peers' adoption of an edit.
func (d *Daemon) confirmTimeout() time.Duration {
	return 10*time.Second + 2*d.node.HB.Timeout
}

// awaitAdoption registers an edit just installed at this node's counter c
// and answers done once every live peer holds it (at once without peers).
func (d *Daemon) awaitAdoption(name, op string, kws []string, c uint64, done func(any, error)) {
	p := &pendingEdit{op: op, kws: kws, counter: c, deadline: d.clk.Now().Add(d.confirmTimeout()),
		done: done, finished: make(chan struct{})}
	if d.cfgs.pending == nil {
		d.cfgs.pending = map[string][]*pendingEdit{}
	}
	d.cfgs.pending[name] = append(d.cfgs.pending[name], p)
	d.checkPending(name)
	select {
	case <-p.finished:
		return
	default:
	}
	// the peers' status also changes with time alone: look again regularly
	go func() {
		for {
			select {
			case <-p.finished:
				return
			case <-d.quit:
				return
			case <-d.clk.After(250 * time.Millisecond):
				if !d.post(func() { d.checkPending(name) }) {
					return
				}
			}
		}
	}()
}

// finishEdit answers a pending edit and forgets it.
func (d *Daemon) finishEdit(name string, p *pendingEdit, err error) {
	ps := d.cfgs.pending[name]
	for i, x := range ps {
		if x == p {
			d.cfgs.pending[name] = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(d.cfgs.pending[name]) == 0 {
		delete(d.cfgs.pending, name)
	}
	close(p.finished)
	if err != nil {
		p.done(nil, err)
		return
	}
	p.done(nil, nil)
}

// checkPending answers the edits of name that every live peer now holds,
// and fails those that waited too long.
func (d *Daemon) checkPending(name string) {
	ps := append([]*pendingEdit(nil), d.cfgs.pending[name]...)
	if len(ps) == 0 {
		return
	}
	now := d.clk.Now()
	for _, p := range ps {
		if !d.knownConfig(name).IncludesEdit(d.node.Name, p.counter) {
			// cannot happen while the rebase keeps the invariant; never ack it
			d.finishEdit(name, p, failed("%s: changed concurrently, retry", name))
			continue
		}
		missing := d.peersLacking(name, p.counter)
		switch {
		case len(missing) == 0:
			d.finishEdit(name, p, nil)
		case now.After(p.deadline):
			d.log.Warn("config edit not confirmed by every live peer", zap.String("svc", name), zap.Strings("nodes", missing))
			d.finishEdit(name, p, failed("%s: the change is installed here, but %s did not confirm it within %s: it may be lost if changed concurrently there: check with svcmgr get, and retry if needed",
				name, strings.Join(missing, ", "), d.confirmTimeout()))
		}
	}
}

// peersLacking lists the live peers whose announced config of name does
// not include this node's edit made at counter c.
func (d *Daemon) peersLacking(name string, c uint64) []string {
	var out []string
	for _, pn := range d.core.PeerNames() {
		p, _ := d.core.Peer(pn)
		if d.peerStatus(pn) != dataset.NodeUp {
			continue
		}
		if p.Data == nil || !p.Data.Configs[name].IncludesEdit(d.node.Name, c) {
			out = append(out, pn)
		}
	}
	return out
}

// rebasePending runs after a config from peer from won over ours: the
// pending edits the winner lacks are applied again on top of it, as one
// new version; those that cannot be are answered "changed concurrently".
func (d *Daemon) rebasePending(name, from string) {
	ps := append([]*pendingEdit(nil), d.cfgs.pending[name]...)
	if len(ps) == 0 {
		return
	}
	cur := d.knownConfig(name)
	inst := d.services[name]
	if cur.Deleted || inst == nil {
		d.failPending(name, failed("%s: deleted concurrently on %s", name, from))
		return
	}
	file := d.p.ServiceConf(name)
	raw := inst.cfg.Raw
	var redo []*pendingEdit
	for _, p := range ps {
		if cur.IncludesEdit(d.node.Name, p.counter) {
			continue
		}
		if p.op == "" || p.rebases >= maxRebases {
			d.finishEdit(name, p, failed("%s: changed concurrently on %s, retry", name, cur.Version.Origin))
			continue
		}
		next, err := applyKeywords(file, raw, p.op, p.kws)
		if err == nil {
			_, err = tomlfile.ParseService(file, name, next)
		}
		if err != nil {
			d.finishEdit(name, p, failed("%s: changed concurrently on %s, and the change no longer applies (%v): retry", name, cur.Version.Origin, err))
			continue
		}
		raw = next
		p.rebases++
		redo = append(redo, p)
	}
	if len(redo) == 0 {
		return
	}
	cfg, err := tomlfile.ParseService(file, name, raw)
	if err == nil {
		e := d.newEntry(name, cfg.Raw)
		if err = d.install(cfg, e, "changed (edits made here applied again on a concurrent version)"); err == nil {
			for _, p := range redo {
				p.counter = e.Version.Counter
			}
			d.log.Info("config edits applied again on top of a concurrent version", zap.String("svc", name),
				zap.String("from", from), zap.Int("edits", len(redo)), zap.Uint64("version", e.Version.Counter))
			return
		}
	}
	for _, p := range redo {
		d.finishEdit(name, p, failed("%s: changed concurrently on %s, and the change no longer applies (%v): retry", name, cur.Version.Origin, err))
	}
}

// failPending answers every pending edit of name with err.
func (d *Daemon) failPending(name string, err error) {
	for _, p := range append([]*pendingEdit(nil), d.cfgs.pending[name]...) {
		d.finishEdit(name, p, err)
	}
}

// applyKeywords applies set or unset of kws to raw.
func applyKeywords(file string, raw []byte, op string, kws []string) ([]byte, error) {
	var err error
	for _, k := range kws {
		if op == "set" {
			raw, err = tomlfile.SetKeyword(file, raw, k)
		} else {
			raw, err = tomlfile.UnsetKeyword(file, raw, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// pendingNames lists the services with edits in flight, sorted.
func (d *Daemon) pendingNames() []string {
	out := make([]string, 0, len(d.cfgs.pending))
	for n := range d.cfgs.pending {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
