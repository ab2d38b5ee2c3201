package ocf

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Metadata is an agent's meta-data (the OCF resource-agent XML).
type Metadata struct {
	Name       string      `xml:"name,attr"`
	Version    string      `xml:"version,attr"`
	LongDesc   string      `xml:"longdesc"`
	ShortDesc  string      `xml:"shortdesc"`
	Parameters []Parameter `xml:"parameters>parameter"`
	Actions    []Action    `xml:"actions>action"`
}

// Parameter is one <parameter> of the meta-data.
type Parameter struct {
	Name       string    `xml:"name,attr"`
	Required   string    `xml:"required,attr"`
	Unique     string    `xml:"unique,attr"`
	Deprecated *struct{} `xml:"deprecated"`
	LongDesc   string    `xml:"longdesc"`
	ShortDesc  string    `xml:"shortdesc"`
	Content    Content   `xml:"content"`
}

// Content is a parameter's type and default.
type Content struct {
	Type    string   `xml:"type,attr"`
	Default string   `xml:"default,attr"`
	Options []Option `xml:"option"`
}

// Option is one value of a select parameter.
type Option struct {
	Value string `xml:"value,attr"`
}

// Action is one <action> of the meta-data.
type Action struct {
	Name     string `xml:"name,attr"`
	Timeout  string `xml:"timeout,attr"`
	Interval string `xml:"interval,attr"`
	Depth    string `xml:"depth,attr"`
	Role     string `xml:"role,attr"`
}

// IsRequired reports whether the parameter must be set.
func (p Parameter) IsRequired() bool { return isTrue(p.Required) }

// IsUnique reports whether the agent says no two resources may share its
// value.
func (p Parameter) IsUnique() bool { return isTrue(p.Unique) }

func isTrue(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// maxMetadata bounds the meta-data read from an agent.
const maxMetadata = 1 << 20

// ParseMetadata reads an agent's meta-data. The XML must have a
// resource-agent root; a DTD reference and the like are ignored.
func ParseMetadata(data []byte) (*Metadata, error) {
	if len(data) > maxMetadata {
		return nil, fmt.Errorf("meta-data of %d bytes: at most %d", len(data), maxMetadata)
	}
	var m Metadata
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false // agents write &nbsp; and the like in their texts
	dec.Entity = xml.HTMLEntity
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("meta-data: no <resource-agent> element: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != "resource-agent" {
			return nil, fmt.Errorf("meta-data: root element <%s>, want <resource-agent>", se.Name.Local)
		}
		if err := dec.DecodeElement(&m, &se); err != nil {
			return nil, fmt.Errorf("meta-data: %v", err)
		}
		break
	}
	for _, p := range m.Parameters {
		if p.Name == "" {
			return nil, fmt.Errorf("meta-data: a parameter without a name")
		}
	}
	return &m, nil
}

// Param returns the parameter name, nil when the agent has none so named.
func (m *Metadata) Param(name string) *Parameter {
	for i := range m.Parameters {
		if m.Parameters[i].Name == name {
			return &m.Parameters[i]
		}
	}
	return nil
}

// Action returns the first action name (with no role, or the first of any
// role), nil when the agent does not list it.
func (m *Metadata) Action(name string) *Action {
	var found *Action
	for i := range m.Actions {
		a := &m.Actions[i]
		if a.Name != name {
			continue
		}
		if a.Role == "" {
			return a
		}
		if found == nil {
			found = a
		}
	}
	return found
}

// HasAction reports whether the agent lists action name.
func (m *Metadata) HasAction(name string) bool { return m.Action(name) != nil }

// Timeout is the timeout the agent advises for action name, 0 when it
// advises none (or one that cannot be read).
func (m *Metadata) Timeout(name string) time.Duration {
	a := m.Action(name)
	if a == nil {
		return 0
	}
	d, err := ParseDuration(a.Timeout)
	if err != nil {
		return 0
	}
	return d
}

// ParseDuration reads an OCF duration as Pacemaker does: a number with
// an optional unit, ms, msec, us, usec, s, sec, m, min, h, hr; no unit
// is seconds ("20", "20s", "2min", "500ms").
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	mult := map[string]time.Duration{
		"": time.Second, "s": time.Second, "sec": time.Second, "secs": time.Second,
		"ms": time.Millisecond, "msec": time.Millisecond, "msecs": time.Millisecond,
		"us": time.Microsecond, "usec": time.Microsecond,
		"m": time.Minute, "min": time.Minute, "mins": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hrs": time.Hour,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid duration %q: unknown unit %q", s, unit)
	}
	if f*float64(mult) > float64(100*365*24*time.Hour) {
		return 0, fmt.Errorf("duration %q out of range", s)
	}
	return time.Duration(f * float64(mult)), nil
}

// ParamError is a parameter refused by the agent's meta-data: Key is
// "params" or "params.NAME", Msg says why with the agent's own words.
type ParamError struct {
	Key string
	Msg string
}

// CheckParams checks params against the meta-data: every name must be a
// parameter of the agent, and every required parameter must be set. The
// messages quote the agent's short description of each parameter.
func (m *Metadata) CheckParams(agent string, params map[string]string) []ParamError {
	var errs []ParamError
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if m.Param(k) == nil {
			errs = append(errs, ParamError{Key: "params." + k, Msg: fmt.Sprintf("%s has no parameter %q; its parameters: %s",
				agent, k, m.paramList())})
		}
	}
	for _, p := range m.Parameters {
		if _, set := params[p.Name]; p.IsRequired() && !set {
			errs = append(errs, ParamError{Key: "params", Msg: fmt.Sprintf("%s needs parameter %q: %s",
				agent, p.Name, p.describe())})
		}
	}
	return errs
}

// paramList names the parameters with their short descriptions, required
// ones marked.
func (m *Metadata) paramList() string {
	var out []string
	for _, p := range m.Parameters {
		s := p.Name
		if p.IsRequired() {
			s += " (required)"
		}
		if d := oneLine(p.ShortDesc); d != "" {
			s += " [" + d + "]"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// describe is the parameter's short description, else the first line
// of its long one.
func (p Parameter) describe() string {
	if d := oneLine(p.ShortDesc); d != "" {
		return d
	}
	return firstLine(p.LongDesc)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func sortStrings(s []string) { sort.Strings(s) }
