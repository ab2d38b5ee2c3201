package config

import (
	"errors"
	"fmt"
	"haven/internal/cmdline"
	pathpkg "path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"haven/constraints"
)

var serviceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// ValidServiceName reports whether name can name a service (and its file):
// lowercase letters, digits, _ . and -, starting with a letter or a digit.
func ValidServiceName(name string) error {
	if len(name) > MaxServiceName {
		return fmt.Errorf("invalid service name %.40q...: %d characters, at most %d", name, len(name), MaxServiceName)
	}
	if !serviceNameRE.MatchString(name) {
		return fmt.Errorf("invalid service name %q: want [a-z0-9][a-z0-9_.-]*", name)
	}
	return nil
}

// MaxServiceConfig is the largest service config: validate and create
// agree, and its JSON (escaped, with the request's other fields) fits the
// local API's 1 MiB request body.
const MaxServiceConfig = 512 << 10

// MaxServiceConfigs bounds the text of the service configs one node
// holds, in all: what one heartbeat message (16 MiB) can carry of a
// member's data. A node refuses an edit or a peer's config that would take
// its configs over it, and its peers refuse a member's data that holds
// more (heartbeat's bounds): 2,000 configs of 7 KB fit.
const MaxServiceConfigs = 16 << 20

// MaxServiceName is the longest service name (its file name is NAME.toml).
const MaxServiceName = 200

// ServiceNameFromFile returns the service name a file names: its base name
// without the ".toml" extension.
func ServiceNameFromFile(path string) string {
	return strings.TrimSuffix(pathpkg.Base(path), ".toml")
}

// ParseService parses and validates a service config. file only names the
// source in errors; name is the service name.
func (dec Decoder) ParseService(file, name string, data []byte) (*ServiceConfig, error) {
	if err := ValidServiceName(name); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if len(data) > MaxServiceConfig {
		return nil, &Error{File: file, Msg: fmt.Sprintf("%d KiB: a service config is at most %d KiB (its JSON must fit the local API's 1 MiB request)", (len(data)+1023)>>10, MaxServiceConfig>>10)}
	}
	d, err := dec.decodeDoc(file, data, serviceSchema)
	if err != nil {
		return nil, err
	}
	if len(d.sections) == 0 {
		// nothing but blanks and comments: a file cut short, or the wrong
		// one; a service of [DEFAULT] keywords alone is still valid (a
		// parent or an affinity target with nothing to run)
		return nil, &Error{File: file, Msg: "empty config (no section, no keyword): a file cut short? A service needs at least [DEFAULT] or a resource ([app.NAME], [ip.NAME], [fs.NAME], [ocf.NAME], [container.NAME])"}
	}
	def := d.ensure(SectionDefault)
	s := &ServiceConfig{File: file, Name: name, Raw: append([]byte(nil), data...), RunDigest: runDigest(d, data)}
	fill(s, def)
	// every error of the file: DEFAULT's first one, then each resource's
	var errs []*Error
	collect := func(err error) error {
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		errs = append(errs, e)
		return nil
	}
	if err := d.checkService(s, def); err != nil {
		if err := collect(err); err != nil {
			return nil, err
		}
	}
	for _, sec := range d.sections {
		if !isResourceKind(sec.kind) {
			continue
		}
		r, err := d.resource(sec)
		if err != nil {
			if err := collect(err); err != nil {
				return nil, err
			}
			continue
		}
		s.Resources = append(s.Resources, r)
	}
	if re := portsClash(s.Resources); re != nil {
		if err := collect(d.refError(re)); err != nil {
			return nil, err
		}
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	sort.SliceStable(s.Resources, func(i, j int) bool {
		a, b := s.Resources[i], s.Resources[j]
		if ra, rb := resourceTypeRank(a.Type), resourceTypeRank(b.Type); ra != rb {
			return ra < rb
		}
		return a.Name < b.Name
	})
	// Every reference must resolve: expand once for a placeholder node.
	if _, err := s.expand("nodename", "/var/lib/haven/services/"+name, false); err != nil {
		return nil, d.refError(err)
	}
	return s, nil
}

// checkService validates the [DEFAULT] keywords.
func (d *document) checkService(s *ServiceConfig, def *section) error {
	for _, n := range s.Nodes {
		if n != "*" && !nodeNameRE.MatchString(n) && !strings.Contains(n, "{") {
			return d.errAt(def, "nodes", "invalid node name %q", n)
		}
	}
	lists := []struct {
		key  string
		list []string
		at   bool // svc@node allowed
	}{
		{"hard_affinity", s.HardAffinity, false},
		{"hard_anti_affinity", s.HardAntiAffinity, false},
		{"soft_affinity", s.SoftAffinity, false},
		{"soft_anti_affinity", s.SoftAntiAffinity, false},
		{"parents", s.Parents, true},
		{"children", s.Children, true},
	}
	for _, l := range lists {
		for _, e := range l.list {
			svc, node, hasNode := strings.Cut(e, "@")
			if strings.Contains(e, "{") {
				continue
			}
			if ValidServiceName(svc) != nil || hasNode && (!l.at || !nodeNameRE.MatchString(node)) {
				want := "a service name"
				if l.at {
					want = `"svc" or "svc@node"`
				}
				return d.errAt(def, l.key, "invalid element %q: want %s", e, want)
			}
			if svc == s.Name && s.Name != "" {
				// itself as its own parent waits forever; as its own
				// affinity it means nothing
				return d.errAt(def, l.key, "names the service itself (%q): a service cannot list itself in %s", e, l.key)
			}
		}
	}
	if err := d.checkFlex(s, def); err != nil {
		return err
	}
	if err := d.checkUpdate(s, def); err != nil {
		return err
	}
	if strings.TrimSpace(s.Constraints) != "" {
		p, err := constraints.Compile(s.Constraints)
		if err != nil {
			return d.errAt(def, "constraints", "%v", err)
		}
		s.Constraint = p
	}
	return nil
}

// The topologies (DEFAULT.topology).
const (
	TopologyFailover = "failover"
	TopologyFlex     = "flex"
)

// IsFlex reports whether the service is a flex service.
func (s *ServiceConfig) IsFlex() bool { return s != nil && s.Topology == TopologyFlex }

// checkFlex validates the flex keywords and fills FlexMax's default:
// target >= 1 or "all" (checkFlexGlobal), min <= target
// <= max, max at most the service's nodes when they are listed (with "*"
// or a reference, CheckServiceNodes checks it against the members), and
// what a flex service cannot take yet (orchestrate other than ha,
// multiple_active other than its default).
func (d *document) checkFlex(s *ServiceConfig, def *section) error {
	if s.Topology != TopologyFlex {
		for _, k := range []string{"flex_target", "flex_min", "flex_max"} {
			if def.isSet(k) {
				return d.errAt(def, k, "applies to topology = %q only (this service is %q)", TopologyFlex, s.Topology)
			}
		}
		return nil
	}
	if s.Orchestrate != "ha" {
		return d.errAt(def, "orchestrate", "a flex service needs orchestrate = \"ha\" (got %q): flex services with orchestrate = \"no\" or \"start\" are not built yet", s.Orchestrate)
	}
	if s.MultipleActive != "stop_others" {
		return d.errAt(def, "multiple_active", "not for a flex service (got %q): its instances beyond flex_target are stopped on the least preferred nodes (docs/behaviour.md, section 10); only the default \"stop_others\" is accepted", s.MultipleActive)
	}
	if s.FlexTarget == CountAll {
		return d.checkFlexGlobal(s, def)
	}
	if s.FlexTarget < 1 {
		return d.errAt(def, "flex_target", "must be at least 1 (got %d)", s.FlexTarget)
	}
	if s.FlexMin < 0 {
		return d.errAt(def, "flex_min", "must not be negative (got %d)", s.FlexMin)
	}
	if s.FlexMin > s.FlexTarget {
		return d.errAt(def, "flex_min", "%d is more than flex_target (%d)", s.FlexMin, s.FlexTarget)
	}
	if !def.isSet("flex_max") {
		s.FlexMax = s.FlexTarget
	}
	if s.FlexMax < s.FlexTarget {
		return d.errAt(def, "flex_target", "%d is more than flex_max (%d)", s.FlexTarget, s.FlexMax)
	}
	if n, ok := listedNodes(s.Nodes); ok && s.FlexMax > n {
		key := "flex_max"
		if !def.isSet(key) {
			key = "flex_target"
		}
		return d.errAt(def, key, "%d instances, but the service has %d nodes (%s): at most one instance per node", s.FlexMax, n, strings.Join(s.Nodes, ", "))
	}
	return nil
}

// checkFlexGlobal validates the global mode (flex_target = "all"): one
// instance on every candidate node, so flex_max is the number of the
// service's nodes (set here when they are listed, 0 with "*" or a
// reference: the members, known at run time) and may not be set; flex_min
// is at most the listed nodes (CheckServiceNodes checks it against the
// members otherwise).
func (d *document) checkFlexGlobal(s *ServiceConfig, def *section) error {
	if def.isSet("flex_max") {
		return d.errAt(def, "flex_max", "not with flex_target = \"all\": the global mode runs at most one instance on each node of the service, so its flex_max is the number of those nodes")
	}
	if s.FlexMin < 0 {
		return d.errAt(def, "flex_min", "must not be negative (got %d)", s.FlexMin)
	}
	s.FlexMax = 0
	if n, ok := listedNodes(s.Nodes); ok {
		s.FlexMax = n
		if s.FlexMin > n {
			return d.errAt(def, "flex_min", "%d instances, but the service has %d nodes (%s): at most one instance per node", s.FlexMin, n, strings.Join(s.Nodes, ", "))
		}
	}
	return nil
}

// FlexGlobal reports whether the service is a flex service in the global
// mode (flex_target = "all").
func (s *ServiceConfig) FlexGlobal() bool { return s.IsFlex() && s.FlexTarget == CountAll }

// listedNodes returns the number of distinct nodes of a nodes list, false
// when it holds "*" or a reference (known once the members are).
func listedNodes(nodes []string) (int, bool) {
	seen := map[string]bool{}
	for _, n := range nodes {
		if n == "*" || strings.Contains(n, "{") {
			return 0, false
		}
		seen[n] = true
	}
	return len(seen), len(nodes) > 0
}

// resource validates and converts one resource section.
func (d *document) resource(sec *section) (ResourceConfig, error) {
	r := ResourceConfig{RID: sec.id(), Type: sec.kind, Name: sec.name}
	if err := d.checkRequired(sec); err != nil {
		return r, err
	}
	fill(&r, sec)
	if r.Restart < 0 {
		return r, d.errAt(sec, "restart", "must not be negative")
	}
	if r.RestartDelayMax != 0 && r.RestartDelayMax < r.RestartDelay {
		return r, d.errAt(sec, "restart_delay_max", "%s is less than restart_delay (%s)", r.RestartDelayMax, r.RestartDelay)
	}
	if r.Timeout <= 0 {
		return r, d.errAt(sec, "timeout", "must be more than 0")
	}
	switch r.Type {
	case SectionApp:
		if r.Start == "" && r.Stop == "" && r.Check == "" {
			return r, d.errAt(sec, "", "an app needs at least one of start, stop, check")
		}
		for _, kv := range [][2]string{{"start", r.Start}, {"stop", r.Stop}, {"check", r.Check}, {"info", r.Info}} {
			if _, err := cmdline.Split(kv[1]); err != nil {
				return r, d.errAt(sec, kv[0], "%v", err)
			}
		}
	case SectionIP:
		if err := checkIP(r); err != nil {
			return r, d.errAt(sec, err.key, "%s", err.msg)
		}
		if r.ProbeTimeout <= 0 || r.ProbeTimeout > 10*time.Second {
			return r, d.errAt(sec, "probe_timeout", "must be more than 0 and at most 10s")
		}
	case SectionFS:
		if err := checkFS(r); err != nil {
			return r, d.errAt(sec, err.key, "%s", err.msg)
		}
	case SectionContainer:
		if err := checkContainer(r); err != nil {
			return r, d.errAt(sec, err.key, "%s", err.msg)
		}
	case SectionOCF:
		r.TimeoutSet = sec.isSet("timeout")
		if err := checkOCF(r); err != nil {
			return r, d.errAt(sec, err.key, "%s", err.msg)
		}
	}
	return r, nil
}

type fieldError struct{ key, msg string }

// checkIP validates ipname, ipdev and netmask, skipping the values that
// hold a reference (checked again by ForNode once expanded).
func checkIP(r ResourceConfig) *fieldError {
	if !strings.Contains(r.IPName, "{") && !isIP(r.IPName) {
		return &fieldError{"ipname", fmt.Sprintf("invalid IP address %q", r.IPName)}
	}
	if r.IPDev == "" {
		return &fieldError{"ipdev", "must not be empty"}
	}
	if m := r.Netmask; m != "" && !strings.Contains(m, "{") {
		// the family is known unless ipname is a reference (then checked
		// again once expanded, by ForNode)
		known := !strings.Contains(r.IPName, "{")
		if msg := checkNetmask(m, known && isIPv4(r.IPName), known && !isIPv4(r.IPName)); msg != "" {
			return &fieldError{"netmask", msg}
		}
	}
	return nil
}

// checkNetmask says what is wrong with netmask m ("" when nothing): a
// prefix length (0..32 for an IPv4 address, 0..128 for IPv6, 0..128 when
// the family is not known yet), or for IPv4 a dotted mask whose ones are
// contiguous (255.255.255.0, not 255.0.255.0).
func checkNetmask(m string, v4, v6 bool) string {
	if n, err := strconv.Atoi(m); err == nil {
		max := 128
		if v4 {
			max = 32
		}
		if n < 0 || n > max {
			return fmt.Sprintf("prefix length %d out of range 0..%d", n, max)
		}
		return ""
	}
	if !isIPv4(m) {
		return fmt.Sprintf("invalid netmask %q: want a prefix length or a dotted IPv4 mask", m)
	}
	if v6 {
		return fmt.Sprintf("dotted mask %q for an IPv6 address: want a prefix length 0..128", m)
	}
	a, _ := parseIP(m)
	b := a.As4()
	inv := ^(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
	if inv&(inv+1) != 0 { // the zeros after the ones must be all the rest
		return fmt.Sprintf("invalid netmask %q: its ones are not contiguous (want e.g. 255.255.255.0)", m)
	}
	return ""
}

// checkFS validates dev, mnt, type and mnt_opt, skipping the values that
// hold a reference (checked again by ForNode once expanded).
func checkFS(r ResourceConfig) *fieldError {
	set := func(v string) bool { return strings.TrimSpace(v) != "" }
	if !set(r.Dev) {
		return &fieldError{"dev", "must not be empty"}
	}
	if m := r.Mnt; !strings.Contains(m, "{") {
		switch {
		case !set(m):
			return &fieldError{"mnt", "must not be empty"}
		case !pathpkg.IsAbs(m):
			return &fieldError{"mnt", fmt.Sprintf("%q is not an absolute path", m)}
		case pathpkg.Clean(m) == "/":
			return &fieldError{"mnt", "cannot be the root directory /"}
		}
	}
	if !set(r.FSType) {
		return &fieldError{"type", "must not be empty (auto lets mount probe the device)"}
	}
	if strings.ContainsAny(r.FSType, " \t\n,") && !strings.Contains(r.FSType, "{") {
		return &fieldError{"type", fmt.Sprintf("invalid filesystem type %q", r.FSType)}
	}
	if strings.ContainsAny(r.MntOpt, " \t\n") && !strings.Contains(r.MntOpt, "{") {
		return &fieldError{"mnt_opt", fmt.Sprintf("invalid mount options %q: want comma separated options, no blanks", r.MntOpt)}
	}
	return nil
}

// refError locates an expansion error in the document.
func (d *document) refError(err error) error {
	var re *refErr
	if !errors.As(err, &re) {
		return &Error{File: d.file, Msg: err.Error()}
	}
	sec := d.find(re.kind, re.name)
	if sec == nil {
		return &Error{File: d.file, Key: re.key, Msg: re.msg}
	}
	return d.errAt(sec, re.kw, "%s", re.msg)
}

// HasRequests reports whether the service requests capacity (cpu or
// memory): only such a service is held back by the nodes' capacity.
func (s *ServiceConfig) HasRequests() bool {
	return s != nil && (s.RequestCPU > 0 || s.RequestMem > 0)
}

// checkUpdate validates the rollout keywords and parses the failure
// ratio; update_order start-first only where a replacement may run
// beside the instance it replaces.
func (d *document) checkUpdate(s *ServiceConfig, def *section) error {
	if s.UpdateParallelism < 1 {
		return d.errAt(def, "update_parallelism", "must be at least 1 (got %d)", s.UpdateParallelism)
	}
	if s.UpdateOrder == "start-first" {
		// a replacement runs beside the instance it replaces: only where a
		// second instance may run, one spare slot per turn of a batch
		switch {
		case !s.IsFlex():
			return d.errAt(def, "update_order", "\"start-first\" is for flex services only (a %s service runs one instance: it restarts in place, \"stop-first\")", s.Topology)
		case s.FlexGlobal():
			return d.errAt(def, "update_order", "\"start-first\" is not for flex_target = \"all\" (an instance on every node: no spare node for a replacement)")
		case s.FlexMax <= s.FlexTarget:
			return d.errAt(def, "update_order", "\"start-first\" needs flex_max above flex_target (got %d and %d): the replacement runs beside the instance it replaces", s.FlexMax, s.FlexTarget)
		case s.UpdateParallelism > s.FlexMax-s.FlexTarget:
			return d.errAt(def, "update_order", "\"start-first\" with update_parallelism %d needs flex_max - flex_target at least %d (got %d): one spare slot per turn of a batch", s.UpdateParallelism, s.UpdateParallelism, s.FlexMax-s.FlexTarget)
		}
	}
	r, err := strconv.ParseFloat(strings.TrimSpace(s.UpdateMaxFailureRatioText), 64)
	if err != nil || r < 0 || r > 1 || r != r {
		return d.errAt(def, "update_max_failure_ratio", "%q: want a number from 0 to 1", s.UpdateMaxFailureRatioText)
	}
	s.UpdateMaxFailureRatio = r
	return nil
}
