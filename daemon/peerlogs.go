package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/dataset"
	"haven/heartbeat"
)

// Reading a peer's service log (`svcmgr logs --node N`) goes through the
// heartbeat's authenticated transport: this node asks N (op svclog), N
// reads the tail of its log off its event loop and answers. The API socket
// stays local and root-only; nothing but a member holding the cluster
// secret can ask.
const (
	opSvcLog = "svclog"
	// peerAskTimeout bounds the wait for a peer's answer.
	peerAskTimeout = 5 * time.Second
	// maxPeerLogLines and maxPeerLogBytes bound what a peer sends back
	// (the last lines; the transport carries at most 1 MiB).
	maxPeerLogLines = 2000
	maxPeerLogBytes = 512 << 10
)

type svcLogAsk struct {
	Svc   string `json:"svc"`
	Lines int    `json:"lines"`
}

// peerAsks are the asks of this node waiting for their answer, by id.
type peerAsks struct {
	mu   sync.Mutex
	wait map[uint64]chan heartbeat.Event
}

// askPeer asks peer node and waits for its answer (run off the loop: it
// blocks up to peerAskTimeout).
func (d *Daemon) askPeer(node, op string, body any) (json.RawMessage, error) {
	return d.askPeerWithin(node, op, body, peerAskTimeout, "its log cannot be read")
}

// askPeerWithin is askPeer waiting up to within; what says what cannot be
// done when the peer cannot be asked ("its log cannot be read").
func (d *Daemon) askPeerWithin(node, op string, body any, within time.Duration, what string) (json.RawMessage, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	ch := make(chan heartbeat.Event, 1)
	v, err := d.call(func() (any, error) {
		if d.hb == nil {
			return nil, failed("%s: this node has no other cluster member to ask", node)
		}
		if node == d.node.Name {
			return nil, badInput(fmt.Errorf("%s is this node", node))
		}
		// a daemon stopped for maintenance or shutting down answers no
		// ask: say so at once rather than wait peerAskTimeout for nothing
		switch st := d.peerStatus(node); st {
		case dataset.NodeStMaint, dataset.NodeStShutting, dataset.NodeDown:
			if op != opSvcLog {
				return nil, failed("%s is %s (its daemon is not running): %s through the cluster now", node, st, what)
			}
			return nil, failed("%s is %s (its daemon is not running): its log cannot be read through the cluster now; read it on %s itself (log/services/ below its root)", node, st, node)
		}
		d.asks.mu.Lock()
		defer d.asks.mu.Unlock()
		id, err := d.hb.Ask(node, op, b)
		if errors.Is(err, heartbeat.ErrNotUp) {
			return nil, failed("%s is not up: %s through the cluster now", node, what)
		}
		if err != nil {
			return nil, badInput(err)
		}
		if d.asks.wait == nil {
			d.asks.wait = map[uint64]chan heartbeat.Event{}
		}
		d.asks.wait[id] = ch
		return id, nil
	})
	if err != nil {
		return nil, err
	}
	id := v.(uint64)
	defer func() {
		d.asks.mu.Lock()
		delete(d.asks.wait, id)
		d.asks.mu.Unlock()
	}()
	t := d.clk.NewTimer(within)
	defer t.Stop()
	select {
	case ev := <-ch:
		if ev.Reason != "" {
			return nil, failed("%s: %s", node, ev.Reason)
		}
		return ev.Body, nil
	case <-t.C():
		return nil, failed("%s did not answer within %s (busy, or its daemon just stopped)", node, within)
	case <-d.quit:
		return nil, failed("the daemon is stopping")
	}
}

// onAnswered hands an answer to its waiting ask (on the loop).
func (d *Daemon) onAnswered(ev heartbeat.Event) {
	d.asks.mu.Lock()
	ch := d.asks.wait[ev.ID]
	delete(d.asks.wait, ev.ID)
	d.asks.mu.Unlock()
	if ch != nil {
		ch <- ev
	}
}

// onAsked answers a peer's ask (on the loop: the checks; the file is read
// off it).
func (d *Daemon) onAsked(ev heartbeat.Event) {
	hb := d.hb
	answer := func(body any, errText string) {
		var b json.RawMessage
		if body != nil {
			b, _ = json.Marshal(body)
		}
		hb.Answer(ev.Node, ev.ID, b, errText)
	}
	switch ev.Op {
	case opSvcLog:
	case opOCFAgents:
		d.answerOCFAgents(ev.Body, answer) // ocfagents.go
		return
	case opPull:
		d.answerPull(ev.Node, ev.Body, answer) // pull.go
		return
	default:
		answer(nil, fmt.Sprintf("unknown request %q (this node runs an older Haven?)", ev.Op))
		return
	}
	var q svcLogAsk
	dec := json.NewDecoder(bytes.NewReader(ev.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		answer(nil, "malformed request: "+err.Error())
		return
	}
	if _, ok := d.services[q.Svc]; !ok {
		answer(nil, fmt.Sprintf("service %s does not exist on %s", q.Svc, d.node.Name))
		return
	}
	if q.Lines < 0 || q.Lines > maxPeerLogLines {
		q.Lines = maxPeerLogLines
	}
	d.log.Debug("peer reads a service log", zap.String("peer", ev.Node), zap.String("svc", q.Svc), zap.Int("lines", q.Lines))
	go func() {
		b, _, err := d.svclogs.tail(q.Svc, q.Lines)
		if err != nil {
			answer(nil, err.Error())
			return
		}
		if len(b) > maxPeerLogBytes {
			b = b[len(b)-maxPeerLogBytes:]
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				b = b[i+1:]
			}
		}
		answer(string(b), "")
	}()
}
