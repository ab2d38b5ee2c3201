package heartbeat

import "time"

// decodeFlat decodes what beats and needs are made of, one flat JSON
// object of the message's scalar keys (numbers, plain ASCII strings, a
// boolean, arrays of such strings), without encoding/json's reflection:
// beats are most of what an idle node decodes, and json.Unmarshal took 12
// µs of one (docs/benchmarks.md). It decides only what it
// decides as json.Unmarshal and decode would: anything else (another key,
// a key twice, an escape, a non-ASCII byte, null, a nested value, a number
// that is not a plain integer in range, another kind, a version or sender
// decode refuses) leaves ok false and decode takes the general path, which
// also words the errors. FuzzDecodeFlat holds it to that.
func decodeFlat(b []byte) (*message, bool) {
	p := flatParser{b: b}
	var m message
	var seen uint32
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	p.ws()
	if !p.eat('}') {
		for {
			p.ws()
			key, ok := p.str()
			if !ok {
				return nil, false
			}
			p.ws()
			if !p.eat(':') {
				return nil, false
			}
			p.ws()
			var bit uint32
			switch string(key) {
			case "v":
				bit = 1 << 0
				m.V, ok = p.int()
			case "k":
				bit = 1 << 1
				m.Kind, ok = p.text()
			case "fmt":
				bit = 1 << 2
				m.Fmt, ok = p.int()
			case "lvl":
				bit = 1 << 3
				m.Lvl, ok = p.int()
			case "rel":
				bit = 1 << 4
				m.Rel, ok = p.text()
			case "from":
				bit = 1 << 5
				m.From, ok = p.text()
			case "inc":
				bit = 1 << 6
				m.Inc, ok = p.uint()
			case "n":
				bit = 1 << 7
				m.N, ok = p.uint()
			case "t":
				bit = 1 << 8
				var t int
				t, ok = p.int()
				m.T = time.Duration(t)
			case "gen":
				bit = 1 << 9
				m.Gen, ok = p.uint()
			case "base":
				bit = 1 << 10
				m.Base, ok = p.uint()
			case "dig":
				bit = 1 << 11
				m.Dig, ok = p.uint()
			case "unseen":
				bit = 1 << 12
				m.Unseen, ok = p.texts()
			case "probe":
				bit = 1 << 13
				m.Probe, ok = p.bool()
			case "twins":
				bit = 1 << 14
				m.Twins, ok = p.texts()
			case "links":
				bit = 1 << 15
				m.Links, ok = p.int()
			case "hear":
				bit = 1 << 16
				m.Hear, ok = p.uint()
			case "ack":
				bit = 1 << 17
				m.Ack, ok = p.acks()
			case "behind":
				bit = 1 << 18
				m.Behind, ok = p.bool()
			case "dhear":
				bit = 1 << 19
				m.DHear, ok = p.uint()
			case "heard":
				bit = 1 << 20
				m.Heard, ok = p.acks()
			}
			if !ok || bit == 0 || seen&bit != 0 {
				return nil, false
			}
			seen |= bit
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return nil, false
		}
	}
	p.ws()
	if p.i != len(p.b) || m.V < protoMin || m.V > protoMax || m.From == "" || (m.Kind != kindBeat && m.Kind != kindNeed) {
		return nil, false
	}
	return &m, true
}

// flatParser reads JSON tokens from b at i.
type flatParser struct {
	b []byte
	i int
}

func (p *flatParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *flatParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes (its bytes, not
// copied).
func (p *flatParser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *flatParser) text() (string, bool) {
	s, ok := p.str()
	return string(s), ok
}

// texts reads an array of strings ([] is an empty slice, as
// json.Unmarshal makes it).
func (p *flatParser) texts() ([]string, bool) {
	if !p.eat('[') {
		return nil, false
	}
	out := []string{}
	p.ws()
	if p.eat(']') {
		return out, true
	}
	for len(out) < maxUnseen {
		p.ws()
		s, ok := p.text()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		p.ws()
		if p.eat(']') {
			return out, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
	return nil, false
}

// acks reads an object of names to pairs of integers, in the order of
// their names as encodeFlat writes them ({} is empty, not nil, as
// echoes.UnmarshalJSON makes it; names out of order, or twice, are left
// to it).
func (p *flatParser) acks() (echoes, bool) {
	if !p.eat('{') {
		return nil, false
	}
	out := echoes{}
	p.ws()
	if p.eat('}') {
		return out, true
	}
	for len(out) < maxUnseen {
		p.ws()
		k, ok := p.text()
		if !ok {
			return nil, false
		}
		if len(out) > 0 && out[len(out)-1].Name >= k {
			return nil, false
		}
		p.ws()
		if !p.eat(':') {
			return nil, false
		}
		var v [2]uint64
		p.ws()
		if !p.eat('[') {
			return nil, false
		}
		for i := range v {
			p.ws()
			if v[i], ok = p.uint(); !ok {
				return nil, false
			}
			p.ws()
			if i == 0 && !p.eat(',') {
				return nil, false
			}
		}
		if !p.eat(']') {
			return nil, false
		}
		out = append(out, echoOf{Name: k, N: v[0], Held: v[1]})
		p.ws()
		if p.eat('}') {
			return out, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
	return nil, false
}

func (p *flatParser) bool() (bool, bool) {
	for _, w := range []string{"true", "false"} {
		if len(p.b)-p.i >= len(w) && string(p.b[p.i:p.i+len(w)]) == w {
			p.i += len(w)
			return w == "true", true
		}
	}
	return false, false
}

// digits reads a JSON integer's digits (no sign): 0, or no leading zero,
// at most 19 of them (no overflow of a uint64 to check below 1e19), and
// not followed by a fraction or an exponent.
func (p *flatParser) digits() (uint64, bool) {
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 19 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return v, true
}

func (p *flatParser) uint() (uint64, bool) { return p.digits() }

func (p *flatParser) int() (int, bool) {
	neg := p.eat('-')
	v, ok := p.digits()
	if !ok || v > 1<<62 {
		return 0, false
	}
	if neg {
		return -int(v), true
	}
	return int(v), true
}
