package heartbeat

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// A message's From is bound to the envelope's authenticated sender: the
// transport hands the core each message with the name it authenticated
// (core.receiveFrom), and the core refuses a message whose From names
// another member. Otherwise a member could speak as another from its own
// address, and the logs would blame the wrong node.
//
// memberlist calls its delegate with the bytes of a message and nothing of
// who sent them, so the messages do not go through it: the transport takes
// memberlist's user messages out of the authenticated datagrams and
// streams itself (their framing: the type byte userMsg, after an optional
// CRC header for datagrams, after a msgpack header holding the length for
// streams). memberlist still sees its own traffic (joins, push/pull);
// what push/pull carries of the core is ignored (mlDelegate): a peer's
// data comes in the full copy the core sends when it sees the peer up.

// memberlist's message types, part of its wire protocol.
const (
	mlUserMsg = 8
	mlHasCrc  = 12
)

// userDatagram returns the message in a datagram payload when it is a
// memberlist user message.
func userDatagram(p []byte) ([]byte, bool) {
	if len(p) >= 5 && p[0] == mlHasCrc {
		if crc32.ChecksumIEEE(p[5:]) != binary.BigEndian.Uint32(p[1:5]) {
			return nil, false // memberlist drops it too
		}
		p = p[5:]
	}
	if len(p) < 2 || p[0] != mlUserMsg {
		return nil, false
	}
	return p[1:], true
}

// userStream delivers an inbound stream that carries a memberlist user
// message to the core under the name its open record authenticated, and
// tells whether it did (the stream is then closed). Other streams are
// memberlist's.
func (t *secTransport) userStream(sc *secConn) bool {
	if len(sc.rbuf) == 0 || sc.rbuf[0] != mlUserMsg {
		return false
	}
	defer sc.Close()
	h, _, err := parseHeader(sc.open)
	if err != nil {
		return true
	}
	sc.SetReadDeadline(time.Now().Add(t.hsTTL)) // as memberlist's TCPTimeout
	b, err := io.ReadAll(sc)
	if err != nil {
		return true // a stream error was reported by Read
	}
	msg, err := userStreamMsg(b)
	if err != nil {
		t.refuse("stream:"+h.name, Event{Kind: Rejected, Node: h.name, Reason: "stream: " + err.Error()})
		return true
	}
	t.c.receiveFrom(h.name, sc.link, msg)
	return true
}

// userStreamMsg returns the message of a user-message stream: the type
// byte, a msgpack map {"UserMsgLen": n}, then n bytes, the end.
func userStreamMsg(b []byte) ([]byte, error) {
	const key = "UserMsgLen"
	bad := fmt.Errorf("malformed user message stream (%d bytes)", len(b))
	if len(b) < 3+len(key) || b[0] != mlUserMsg || b[1] != 0x81 || b[2] != 0xa0|byte(len(key)) || string(b[3:3+len(key)]) != key {
		return nil, bad
	}
	rest := b[3+len(key):]
	if len(rest) == 0 {
		return nil, bad
	}
	var n uint64
	var size int
	switch c := rest[0]; {
	case c < 0x80:
		n, size = uint64(c), 1
	case c == 0xcc || c == 0xd0:
		size = 2
	case c == 0xcd || c == 0xd1:
		size = 3
	case c == 0xce || c == 0xd2:
		size = 5
	case c == 0xcf || c == 0xd3:
		size = 9
	default:
		return nil, bad
	}
	if len(rest) < size {
		return nil, bad
	}
	switch size {
	case 2:
		n = uint64(rest[1])
	case 3:
		n = uint64(binary.BigEndian.Uint16(rest[1:]))
	case 5:
		n = uint64(binary.BigEndian.Uint32(rest[1:]))
	case 9:
		n = binary.BigEndian.Uint64(rest[1:])
	}
	if rest[0] >= 0xd0 && rest[0] <= 0xd3 && n>>(8*uint(size-1)-1) != 0 {
		return nil, bad // negative
	}
	msg := rest[size:]
	if uint64(len(msg)) != n {
		return nil, bad
	}
	return msg, nil
}

// refuseForeignFromLocked refuses m when its From is not sender, the member the
// transport authenticated, and says so blaming the sender.
func (c *core) refuseForeignFromLocked(sender string, m *message) bool {
	if m.From == sender {
		return false
	}
	c.rejectLocked(sender, fmt.Sprintf("message from %s claims to come from %.64q: refused (a member speaks only for itself)", sender, m.From))
	return true
}

// unbound counts a message memberlist handed over without its sender (a
// framing the transport did not take out): refused.
func (c *core) unbound() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.rejectLocked("", "message without an authenticated sender (memberlist framing not taken out by the transport): refused")
		c.drainLocked()
	}
}
