package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Asks are small requests from one node to another over the heartbeat's
// authenticated transport (today: the tail of a service log for `svcmgr
// logs --node`). The heartbeat only carries them: the owner gets an Asked
// event, does the work off its event loop and answers with Answer; the
// asker gets an Answered event with the same ID. Nothing is retried: the
// asker gives up after its own deadline. A node of an older version
// rejects the unknown kinds (a Rejected event there), and the asker's
// deadline passes.
const (
	kindAsk    = "ask"
	kindAnswer = "answer"
	// maxAskBody bounds the body of an ask or an answer.
	maxAskBody = 1 << 20
	// maxAsksQueued bounds the Asked events waiting for the owner: more
	// are answered "busy" at once, so that a peer cannot grow our backlog.
	maxAsksQueued = 16
)

// ErrNotUp is returned by Ask for a member that is not up.
var ErrNotUp = errors.New("not up")

func validAsk(m *message) error {
	if m.ID == 0 {
		return fmt.Errorf("%s message without id", m.Kind)
	}
	if m.Kind == kindAsk && m.Op == "" {
		return errors.New("ask message without op")
	}
	if len(m.Body) > maxAskBody {
		return fmt.Errorf("%s message body of %d bytes exceeds %d", m.Kind, len(m.Body), maxAskBody)
	}
	return nil
}

// ask sends an ask to a live member; see Heartbeat.Ask.
func (c *core) ask(to, op string, body json.RawMessage) (uint64, error) {
	if len(body) > maxAskBody {
		return 0, fmt.Errorf("ask body of %d bytes exceeds %d", len(body), maxAskBody)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[to]
	switch {
	case c.closed:
		return 0, errors.New("heartbeat closed")
	case p == nil:
		return 0, fmt.Errorf("%s is not another member of the cluster", to)
	case !p.up:
		return 0, fmt.Errorf("%s: %w", to, ErrNotUp)
	}
	c.nextAsk++
	c.sendLocked(to, c.encode(&message{Kind: kindAsk, From: c.s.Node, Inc: c.inc, ID: c.nextAsk, Op: op, Body: body}))
	return c.nextAsk, nil
}

// answer sends the answer to an ask; see Heartbeat.Answer.
func (c *core) answer(to string, id uint64, body json.RawMessage, errText string) {
	if len(body) > maxAskBody {
		body, errText = nil, fmt.Sprintf("answer of %d bytes exceeds %d", len(body), maxAskBody)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.peers[to] == nil {
		return
	}
	c.answerLocked(to, id, body, errText)
}

func (c *core) answerLocked(to string, id uint64, body json.RawMessage, errText string) {
	c.sendLocked(to, c.encode(&message{Kind: kindAnswer, From: c.s.Node, Inc: c.inc, ID: id, Body: body, Err: errText}))
}

// receiveAskLocked turns an ask or an answer of p into an event.
func (c *core) receiveAskLocked(p *peer, m *message) {
	if m.Kind == kindAnswer {
		c.emitLocked(Event{Kind: Answered, Node: p.name, ID: m.ID, Body: m.Body, Reason: m.Err})
		return
	}
	queued := 0
	for _, ev := range c.backlog {
		if ev.Kind == Asked {
			queued++
		}
	}
	if queued >= maxAsksQueued {
		c.answerLocked(p.name, m.ID, nil, "busy: too many requests waiting, retry later")
		return
	}
	c.emitLocked(Event{Kind: Asked, Node: p.name, ID: m.ID, Op: m.Op, Body: m.Body})
}
