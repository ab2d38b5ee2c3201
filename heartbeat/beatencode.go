package heartbeat

import "strconv"

// encodeFlat encodes a beat or a need by hand, into the bytes
// json.Marshal makes of it (the fields in the struct's order, the empty
// ones left out, the echo's names sorted), without its reflection: beats
// are most of what an idle node encodes, and the echo's map made
// json.Marshal's share of a beat round twice what it was. Anything else
// (another kind, a string json would escape: not printable ASCII, or " \
// < > &) leaves ok false and encode takes json.Marshal.
// TestEncodeFlat holds it to that.
func encodeFlat(m *message) ([]byte, bool) {
	if m.Kind != kindBeat && m.Kind != kindNeed || m.Node != nil || m.Delta != nil || m.Base != 0 ||
		m.ID != 0 || m.Op != "" || m.Body != nil || m.Err != "" ||
		!plain(m.Kind) || !plain(m.Rel) || !plain(m.From) {
		return nil, false
	}
	for _, s := range m.Unseen {
		if !plain(s) {
			return nil, false
		}
	}
	for _, s := range m.Twins {
		if !plain(s) {
			return nil, false
		}
	}
	for _, es := range []echoes{m.Ack, m.Heard} {
		for i, e := range es {
			if !plain(e.Name) || i > 0 && es[i-1].Name >= e.Name {
				return nil, false // json sorts the names (a name twice: left to it)
			}
		}
	}
	b := make([]byte, 0, 160+24*(len(m.Ack)+len(m.Heard)))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(m.V), 10)
	b = appendStr(append(b, `,"k":`...), m.Kind)
	if m.Fmt != 0 {
		b = strconv.AppendInt(append(b, `,"fmt":`...), int64(m.Fmt), 10)
	}
	if m.Lvl != 0 {
		b = strconv.AppendInt(append(b, `,"lvl":`...), int64(m.Lvl), 10)
	}
	if m.Rel != "" {
		b = appendStr(append(b, `,"rel":`...), m.Rel)
	}
	b = appendStr(append(b, `,"from":`...), m.From)
	b = strconv.AppendUint(append(b, `,"inc":`...), m.Inc, 10)
	if m.N != 0 {
		b = strconv.AppendUint(append(b, `,"n":`...), m.N, 10)
	}
	if m.T != 0 {
		b = strconv.AppendInt(append(b, `,"t":`...), int64(m.T), 10)
	}
	b = strconv.AppendUint(append(b, `,"gen":`...), m.Gen, 10)
	if m.Dig != 0 {
		b = strconv.AppendUint(append(b, `,"dig":`...), m.Dig, 10)
	}
	if len(m.Unseen) > 0 {
		b = appendStrs(append(b, `,"unseen":`...), m.Unseen)
	}
	if m.Probe {
		b = append(b, `,"probe":true`...)
	}
	if len(m.Twins) > 0 {
		b = appendStrs(append(b, `,"twins":`...), m.Twins)
	}
	if m.Links != 0 {
		b = strconv.AppendInt(append(b, `,"links":`...), int64(m.Links), 10)
	}
	if m.Hear != 0 {
		b = strconv.AppendUint(append(b, `,"hear":`...), m.Hear, 10)
	}
	if m.Behind {
		b = append(b, `,"behind":true`...)
	}
	if m.DHear != 0 {
		b = strconv.AppendUint(append(b, `,"dhear":`...), m.DHear, 10)
	}
	if len(m.Ack) > 0 {
		b = appendEchoes(append(b, `,"ack":`...), m.Ack)
	}
	if len(m.Heard) > 0 {
		b = appendEchoes(append(b, `,"heard":`...), m.Heard)
	}
	return append(b, '}'), true
}

// appendEchoes appends es as a JSON object of names to [N, Held].
func appendEchoes(b []byte, es echoes) []byte {
	b = append(b, '{')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, e.Name)
		b = strconv.AppendUint(append(b, `:[`...), e.N, 10)
		b = strconv.AppendUint(append(b, ','), e.Held, 10)
		b = append(b, ']')
	}
	return append(b, '}')
}

// plain tells whether json.Marshal writes s as it is between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendStrs(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, s)
	}
	return append(b, ']')
}
