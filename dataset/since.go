package dataset

import (
	"reflect"
	"strconv"
)

// A field of a node's own data (Node, Instance, Resource) added by a later
// format carries the tag `since:"N"` (N: the format version that added
// it, node/upgrade), and omitempty: a node of an earlier release drops it
// from the copy it holds (those structs keep no unknown field, unknown.go),
// so the digest its beats are checked against (heartbeat/message.go) is
// that of the data without it until the cluster feature level reaches N.
// AtLevel gives that view.

// sinceField is a tagged field of a struct: its index and its version.
type sinceField struct {
	index int
	since int
}

func sinceFields(t reflect.Type) []sinceField {
	var out []sinceField
	for i := 0; i < t.NumField(); i++ {
		if s := t.Field(i).Tag.Get("since"); s != "" {
			if v, err := strconv.Atoi(s); err == nil {
				out = append(out, sinceField{i, v})
			}
		}
	}
	return out
}

var (
	nodeSince     = sinceFields(reflect.TypeFor[Node]())
	instanceSince = sinceFields(reflect.TypeFor[Instance]())
	resourceSince = sinceFields(reflect.TypeFor[Resource]())
)

// zeroSince zeroes the fields of fs newer than level in the struct p
// points to, and reports whether any was set.
func zeroSince(p any, fs []sinceField, level int) bool {
	v := reflect.ValueOf(p).Elem()
	changed := false
	for _, f := range fs {
		if f.since > level && !v.Field(f.index).IsZero() {
			v.Field(f.index).SetZero()
			changed = true
		}
	}
	return changed
}

// AtLevel returns n as a node at feature level level writes it: without
// the fields of a later format. n itself is unchanged; when no field is
// newer than level, n is returned as is (no copy).
func (n *Node) AtLevel(level int) *Node {
	if len(nodeSince) == 0 && len(instanceSince) == 0 && len(resourceSince) == 0 {
		return n
	}
	c := *n
	changed := zeroSince(&c, nodeSince, level)
	if len(instanceSince) > 0 || len(resourceSince) > 0 {
		svcs := make(map[string]Instance, len(n.Services))
		for k, inst := range n.Services {
			changed = zeroSince(&inst, instanceSince, level) || changed
			if len(resourceSince) > 0 && len(inst.Resources) > 0 {
				res := make(map[string]Resource, len(inst.Resources))
				for rk, r := range inst.Resources {
					changed = zeroSince(&r, resourceSince, level) || changed
					res[rk] = r
				}
				inst.Resources = res
			}
			svcs[k] = inst
		}
		if n.Services == nil {
			svcs = nil
		}
		c.Services = svcs
	}
	if !changed {
		return n
	}
	return &c
}
