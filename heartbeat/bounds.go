package heartbeat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"haven/config"
	"haven/dataset"
)

// Bounds of what one member's data may hold, whoever sends it: a message
// is at most maxMessage bytes, but a few bytes of JSON ("s1":{}) decode
// into a few hundred bytes of Go values (an instance is 280 bytes before
// its map entry), and each copy held was cloned again for the daemon
// (it is shared now, cow.go): one full copy of a million empty services
// took a daemon from 24 MB to 827 MB. A message over a bound is refused before it is decoded (a
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
	// maxConfigBytes bounds one config's text: no node installs a larger
	// one (config.MaxServiceConfig), so a larger one is refused at
	// receipt rather than held in the copy of its sender (1 MiB configs,
	// refused at install, took a daemon from 20 to 213 MB).
	maxConfigBytes = config.MaxServiceConfig
	// maxCopyConfigText bounds the text of a member's configs in all: no
	// node holds more (config.MaxServiceConfigs). A full copy cannot
	// exceed it (a message is at most as large), but deltas built the
	// copy of a member up without end: 100 configs of 500 KiB took every
	// daemon from 20 to 150 MB.
	maxCopyConfigText = config.MaxServiceConfigs
	maxConfigIncludes = 256 // nodes in a config's lineage (a cluster has at most 32)
	maxUnseen         = 256 // members a beat says are down (a cluster has at most 32)
)

// boundsCheckAbove: a message of at most this many bytes cannot exceed a
// bound by much (every entry takes at least 6 bytes), nor hold more than a
// few hundred KB once decoded: beats and small deltas skip the check.
const boundsCheckAbove = 4 << 10

// checkBounds refuses a message whose node or delta exceeds a bound. It
// reads the message's shape in one pass over its bytes (counts and sizes,
// nothing decoded, nothing allocated in proportion to the message), as
// encoding/json will decode it: keys match case-insensitively (Unicode
// simple folding, escapes resolved), and the maps of a key given twice add
// up. A malformed message passes: decode refuses it, saying why.
func checkBounds(b []byte) error {
	if len(b) <= boundsCheckAbove {
		return nil
	}
	s := &shapeScan{b: b}
	var from string
	var err error
	unseen := 0
	s.object(func(k string) {
		switch {
		case strings.EqualFold(k, "from"):
			from = s.shortString()
		case strings.EqualFold(k, "unseen"):
			if unseen += s.count(); unseen > maxUnseen {
				err = orErr(err, boundError("members unseen", unseen, maxUnseen))
			}
		case strings.EqualFold(k, "node"):
			err = orErr(err, s.node(""))
		case strings.EqualFold(k, "delta"):
			err = orErr(err, s.delta())
		default:
			s.skip()
		}
	})
	if err == nil {
		return nil
	}
	return fmt.Errorf("message from %.64q over a bound of a member's data, refused: %w", from, err)
}

func orErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// shapeScan walks a JSON text once. On bytes that are not JSON it stops
// (ok false) and every count it gave is a lower bound: decode refuses the
// message anyway.
type shapeScan struct {
	b    []byte
	i    int
	stop bool
	// the counts of the node being read, adding up over repeated keys
	labels, services, resources, targets, configs, clears int
}

func (s *shapeScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte past white space, 0 at the end or after a stop.
func (s *shapeScan) peek() byte {
	s.ws()
	if s.stop || s.i >= len(s.b) {
		s.stop = true
		return 0
	}
	return s.b[s.i]
}

// str reads a string and returns its bytes between the quotes, escapes
// as sent.
func (s *shapeScan) str() []byte {
	if s.peek() != '"' {
		s.stop = true
		return nil
	}
	start := s.i + 1
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return s.b[start : s.i-1]
		}
	}
	s.stop = true
	return nil
}

// key reads an object key as encoding/json compares it: its escapes
// resolved (a key too long to be a field name is returned as sent).
func (s *shapeScan) key() string {
	raw := s.str()
	if bytes.IndexByte(raw, '\\') < 0 || len(raw) > 64 {
		return string(raw)
	}
	var k string
	if json.Unmarshal(s.b[s.i-len(raw)-2:s.i], &k) != nil {
		return string(raw)
	}
	return k
}

// shortString reads a string value, up to 64 bytes of it as sent.
func (s *shapeScan) shortString() string {
	if s.peek() != '"' {
		s.skip()
		return ""
	}
	raw := s.str()
	return string(raw[:min(len(raw), 64)])
}

// textSize reads a string value and returns the size of its text: its
// bytes as sent, an escape counting for the bytes it stands for at most.
func (s *shapeScan) textSize() int {
	if s.peek() != '"' {
		s.skip()
		return 0
	}
	raw := s.str()
	n := len(raw)
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			if raw[i+1] == 'u' {
				n -= 3 // 6 bytes for at most 3
				i += 5
			} else {
				n-- // 2 bytes for 1
				i++
			}
		}
	}
	return n
}

// skip reads one value of any kind.
func (s *shapeScan) skip() {
	depth := 0
	for !s.stop {
		switch s.peek() {
		case 0:
			return
		case '"':
			s.str()
		case '{', '[':
			depth++
			s.i++
			continue
		case '}', ']':
			if depth == 0 {
				return // the caller's
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return
			}
			s.i++
			continue
		default: // a number, true, false, null
			for s.i < len(s.b) && !strings.ContainsRune(" \t\n\r,:]}{[\"", rune(s.b[s.i])) {
				s.i++
			}
		}
		if depth == 0 {
			return
		}
	}
}

// object reads an object, calling member for each key with the scan on
// its value, which member must read. Anything but an object is skipped.
func (s *shapeScan) object(member func(k string)) {
	if s.peek() != '{' {
		s.skip()
		return
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return
	}
	for !s.stop {
		k := s.key()
		if s.peek() != ':' {
			s.stop = true
			return
		}
		s.i++
		at := s.i
		member(k)
		if s.i == at && !s.stop {
			s.skip() // member read nothing
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.stop = true
			return
		}
	}
}

// count reads an object or an array and returns its number of members.
func (s *shapeScan) count() int {
	n := 0
	switch s.peek() {
	case '{':
		s.object(func(string) { n++; s.skip() })
	case '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return 0
		}
		for !s.stop {
			n++
			s.skip()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return n
			default:
				s.stop = true
			}
		}
	default:
		s.skip()
	}
	return n
}

// node reads a node (a full copy's, or a delta's head) against the
// bounds.
func (s *shapeScan) node(prefix string) error {
	var err error
	s.object(func(k string) {
		switch {
		case strings.EqualFold(k, "labels"):
			s.labels += s.count()
		case strings.EqualFold(k, "services"):
			err = orErr(err, s.instances())
		case strings.EqualFold(k, "targets"):
			s.targets += s.count()
		case strings.EqualFold(k, "configs"):
			err = orErr(err, s.configEntries())
		case strings.EqualFold(k, "clears"):
			s.clears += s.count()
		default:
			s.skip()
		}
	})
	for _, c := range []struct {
		what     string
		n, limit int
	}{{"labels", s.labels, maxCopyLabels}, {"targets", s.targets, maxCopyTargets}, {"clears", s.clears, maxCopyClears}} {
		if err == nil && c.n > c.limit {
			err = boundError(c.what, c.n, c.limit)
		}
	}
	if err != nil && prefix != "" {
		err = fmt.Errorf("%s%w", prefix, err)
	}
	return err
}

// instances reads a map of instances: their number, and their resources
// in all; it stops at the first bound exceeded.
func (s *shapeScan) instances() error {
	var err error
	s.object(func(string) {
		if err != nil {
			s.skip()
			return
		}
		if s.services++; s.services > maxCopyServices {
			err = tooMany("services", maxCopyServices)
			s.stop = true
			return
		}
		s.object(func(k string) {
			if strings.EqualFold(k, "resources") {
				s.resources += s.count()
			} else {
				s.skip()
			}
		})
		if s.resources > maxCopyResources {
			err = boundError("resources", s.resources, maxCopyResources)
			s.stop = true
		}
	})
	return err
}

// configEntries reads a map of config entries: their number, the size of
// each text and of each lineage; it stops at the first bound exceeded.
func (s *shapeScan) configEntries() error {
	var err error
	s.object(func(name string) {
		if err != nil {
			s.skip()
			return
		}
		if s.configs++; s.configs > maxCopyConfigs {
			err = tooMany("configs", maxCopyConfigs)
			s.stop = true
			return
		}
		size, includes := 0, 0
		s.object(func(k string) {
			switch {
			case strings.EqualFold(k, "raw"):
				size = s.textSize() // the last one given is the one kept
			case strings.EqualFold(k, "includes"):
				includes += s.count()
			default:
				s.skip()
			}
		})
		switch {
		case size > maxConfigBytes:
			err = fmt.Errorf("config %.64q of %d bytes (at most %d): %w", name, size, maxConfigBytes, errOverBound)
		case includes > maxConfigIncludes:
			err = fmt.Errorf("config %.64q: %d nodes in its lineage (at most %d): %w", name, includes, maxConfigIncludes, errOverBound)
		}
		if err != nil {
			s.stop = true
		}
	})
	return err
}

// delta reads a delta against the bounds (the copy it applies to is
// bounded again as it applies: delta.bound).
func (s *shapeScan) delta() error {
	var err error
	var del, tset, tdel, cdel int
	s.object(func(k string) {
		switch {
		case strings.EqualFold(k, "head"):
			head := &shapeScan{b: s.b, i: s.i}
			err = orErr(err, head.node("delta head: "))
			s.i, s.stop = head.i, head.stop
		case strings.EqualFold(k, "set"):
			err = orErr(err, s.instances())
		case strings.EqualFold(k, "cset"):
			err = orErr(err, s.configEntries())
		case strings.EqualFold(k, "del"):
			del += s.count()
		case strings.EqualFold(k, "tset"):
			tset += s.count()
		case strings.EqualFold(k, "tdel"):
			tdel += s.count()
		case strings.EqualFold(k, "cdel"):
			cdel += s.count()
		default:
			s.skip()
		}
	})
	for _, c := range []struct {
		what     string
		n, limit int
	}{{"deleted services", del, maxCopyServices}, {"targets", tset, maxCopyTargets},
		{"deleted targets", tdel, maxCopyTargets}, {"deleted configs", cdel, maxCopyConfigs}} {
		if err == nil && c.n > c.limit {
			err = boundError(c.what, c.n, c.limit)
		}
	}
	return err
}

// errOverBound marks a bound exceeded.
var errOverBound = errors.New("over a bound")

// tooMany is a count over its bound, stopped at the first beyond it.
func tooMany(what string, limit int) error {
	return fmt.Errorf("more than %d %s: %w", limit, what, errOverBound)
}

func boundError(what string, n, limit int) error {
	return fmt.Errorf("%d %s (at most %d): %w", n, what, limit, errOverBound)
}

// bound removes from d, before it is applied to n (the copy held of a
// peer, whose instances hold res resources in all: the caller keeps the
// count), the entries that would take n over a bound: a new instance,
// target or config beyond their number, an instance whose resources would
// exceed the total, a config whose text would take the texts over theirs.
// It returns how many were removed. The copy then differs from the peer's
// data: the next beat's digest asks for a full copy, refused (and
// reported) when the peer's data is over a bound indeed. Its cost is that
// of the delta, not of n, but for a delta that carries configs (rare: an
// edit), which counts the text of n's.
func (d *delta) bound(n *dataset.Node, res int) int {
	left := 0
	if len(d.Set) > 0 {
		size := len(n.Services)
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
	return left + trimNew(n.Targets, d.TSet, maxCopyTargets) + trimNew(n.Configs, d.CSet, maxCopyConfigs) + trimText(n.Configs, d.CSet)
}

// trimText removes from set the configs whose text would take the texts
// of m, once set applied, over maxCopyConfigText, in name order.
func trimText(m, set map[string]dataset.ConfigEntry) int {
	grows := false
	for k, v := range set {
		grows = grows || len(v.Raw) > len(m[k].Raw)
	}
	if !grows {
		return 0
	}
	total := 0
	for _, e := range m {
		total += len(e.Raw)
	}
	left := 0
	for _, k := range slices.Sorted(maps.Keys(set)) {
		grow := len(set[k].Raw) - len(m[k].Raw)
		if grow > 0 && total+grow > maxCopyConfigText {
			delete(set, k)
			left++
			continue
		}
		total += grow
	}
	return left
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
