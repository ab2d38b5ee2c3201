package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"

	"haven/dataset"
)

// Bounds of what one member's data may hold, whoever sends it: a message
// is at most maxMessage bytes, but a few bytes of JSON ("s1":{}) decode
// into a few hundred bytes of Go values (an instance is 280 bytes before
// its map entry), and each copy held is cloned again for the daemon: one
// full copy of a million empty services took a daemon from 24 MB to
// 827 MB. A message over a bound is refused before it is decoded (a
// rate-limited report names the sender); a delta that would take the copy
// held of a peer over a bound is applied without the entries beyond it,
// so that the copy's digest differs from the peer's and the full copy it
// then asks for is refused in turn, reported. The bounds are ten times the
// largest cluster measured (2,000 services with their configs on 16
// nodes, docs/benchmarks.md); docs/security.md lists them.
const (
	maxCopyServices  = 20000  // instances in one node's data
	maxCopyResources = 200000 // resources of all the instances of one node's data
	maxCopyTargets   = 20000
	maxCopyClears    = 20000
	maxCopyConfigs   = 20000
	maxCopyLabels    = 1024
	// maxConfigBytes bounds one config's text: the local API takes a
	// request body of at most 1 MiB, so no config created here is larger.
	maxConfigBytes    = 1 << 20
	maxConfigIncludes = 256 // nodes in a config's lineage (a cluster has at most 32)
)

// boundsCheckAbove: a message of at most this many bytes cannot exceed a
// bound by much (every entry takes at least 6 bytes), nor hold more than a
// few hundred KB once decoded: beats and small deltas skip the check.
const boundsCheckAbove = 4 << 10

// count is the number of members of a JSON object or elements of an array
// (0 for null), counted without decoding them. Every count adds up over
// repeated keys: encoding/json merges the maps of a key given twice.
type count int

func (n *count) UnmarshalJSON(b []byte) error {
	*n += count(jsonMembers(b))
	return nil
}

// jsonMembers counts the members (or elements) of the object (or array)
// b, which encoding/json validated already: the commas at depth 1 outside
// strings, plus one when it is not empty.
func jsonMembers(b []byte) int {
	depth, n, empty := 0, 0, true
	inStr, esc := false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			if depth == 1 {
				empty = false
			}
			continue
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth == 1 {
				continue
			}
		case c == '}' || c == ']':
			depth--
		case c == ',' && depth == 1:
			n++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if depth >= 1 {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// services counts the instances of a services map and their resources,
// refusing before decoding anything when there are too many instances.
type services struct{ n, resources int }

func (s *services) UnmarshalJSON(b []byte) error {
	if s.n += jsonMembers(b); s.n > maxCopyServices {
		return boundError("services", s.n, maxCopyServices)
	}
	var m map[string]struct {
		Resources count `json:"resources"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, i := range m {
		s.resources += int(i.Resources)
	}
	if s.resources > maxCopyResources {
		return boundError("resources", s.resources, maxCopyResources)
	}
	return nil
}

// configs checks the configs of a configs map: their number, the size of
// each text and of each lineage.
type configs int

func (c *configs) UnmarshalJSON(b []byte) error {
	n := int(*c) + jsonMembers(b)
	if n > maxCopyConfigs {
		return boundError("configs", n, maxCopyConfigs)
	}
	var m map[string]struct {
		Raw      string `json:"raw"` // at most the message's bytes, in all
		Includes count  `json:"includes"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for name, e := range m {
		if len(e.Raw) > maxConfigBytes {
			return overBound(fmt.Sprintf("config %.64q of %d bytes (at most %d)", name, len(e.Raw), maxConfigBytes))
		}
		if e.Includes > maxConfigIncludes {
			return overBound(fmt.Sprintf("config %.64q: %d nodes in its lineage (at most %d)", name, int(e.Includes), maxConfigIncludes))
		}
	}
	*c = configs(n)
	return nil
}

// nodeShape and deltaShape are what checkBounds reads of a message.
type nodeShape struct {
	Labels   count    `json:"labels"`
	Services services `json:"services"`
	Targets  count    `json:"targets"`
	Configs  configs  `json:"configs"`
	Clears   count    `json:"clears"`
}

type deltaShape struct {
	Head *nodeShape `json:"head"`
	Set  services   `json:"set"`
	Del  count      `json:"del"`
	TSet count      `json:"tset"`
	TDel count      `json:"tdel"`
	CSet configs    `json:"cset"`
	CDel count      `json:"cdel"`
}

// checkBounds refuses a message whose node or delta exceeds a bound,
// reading only its shape (counts and sizes): nothing of the size of the
// entries is allocated.
func checkBounds(b []byte) error {
	if len(b) <= boundsCheckAbove {
		return nil
	}
	var m struct {
		From  string      `json:"from"`
		Node  *nodeShape  `json:"node"`
		Delta *deltaShape `json:"delta"`
	}
	err := json.Unmarshal(b, &m)
	if err == nil {
		err = m.Node.check("")
	}
	if err == nil && m.Delta != nil {
		err = m.Delta.Head.check("delta head: ")
		for _, c := range []struct {
			what string
			n    count
			max  int
		}{{"deleted services", m.Delta.Del, maxCopyServices}, {"targets", m.Delta.TSet, maxCopyTargets},
			{"deleted targets", m.Delta.TDel, maxCopyTargets}, {"deleted configs", m.Delta.CDel, maxCopyConfigs}} {
			if err == nil && int(c.n) > c.max {
				err = boundError(c.what, int(c.n), c.max)
			}
		}
	}
	var ob overBound
	if !errors.As(err, &ob) {
		return nil // malformed: decode says how
	}
	if m.From == "" { // the shape stopped before the sender's name
		var f struct {
			From string `json:"from"`
		}
		json.Unmarshal(b, &f)
		m.From = f.From
	}
	return fmt.Errorf("message from %.64q over a bound of a member's data, refused: %w", m.From, err)
}

// overBound is a bound exceeded.
type overBound string

func (e overBound) Error() string { return string(e) }

func (n *nodeShape) check(prefix string) error {
	if n == nil {
		return nil
	}
	for _, c := range []struct {
		what string
		n    int
		max  int
	}{{"labels", int(n.Labels), maxCopyLabels}, {"targets", int(n.Targets), maxCopyTargets},
		{"clears", int(n.Clears), maxCopyClears}} {
		if c.n > c.max {
			return overBound(prefix + boundError(c.what, c.n, c.max).Error())
		}
	}
	return nil
}

func boundError(what string, n, limit int) error {
	return overBound(fmt.Sprintf("%d %s (at most %d)", n, what, limit))
}

// bound removes from d, before it is applied to n (the copy held of a
// peer), the entries that would take n over a bound: a new instance,
// target or config beyond their number, an instance whose resources would
// exceed the total. It returns how many were removed. The copy then
// differs from the peer's data: the next beat's digest asks for a full
// copy, refused (and reported) when the peer's data is over a bound
// indeed.
func (d *delta) bound(n *dataset.Node) int {
	left := 0
	if len(d.Set) > 0 {
		res, size := 0, len(n.Services)
		for _, i := range n.Services {
			res += len(i.Resources)
		}
		for k, v := range d.Set {
			old, had := n.Services[k]
			grow := len(v.Resources) - len(old.Resources)
			if (!had && size >= maxCopyServices) || (grow > 0 && res+grow > maxCopyResources) {
				delete(d.Set, k)
				left++
				continue
			}
			res += grow
			if !had {
				size++
			}
		}
	}
	return left + trimNew(n.Targets, d.TSet, maxCopyTargets) + trimNew(n.Configs, d.CSet, maxCopyConfigs)
}

// trimNew removes from set the new keys beyond limit entries in m (the
// deletions of the delta are not counted: it errs on the safe side).
func trimNew[V any](m, set map[string]V, limit int) int {
	left, size := 0, len(m)
	for k := range set {
		if _, ok := m[k]; ok {
			continue
		}
		if size >= limit {
			delete(set, k)
			left++
			continue
		}
		size++
	}
	return left
}
