package config

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"haven/constraints"
)

// Error is a configuration error. It names the file, the line when known,
// and the keyword ("DEFAULT.orchestrate", "app#web.timeout", "hb.port").
type Error struct {
	File string
	Line int // 0 when unknown
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors are every error found in one file, in file order (at least two:
// one error is an *Error alone). errors.As finds the first *Error in it.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// joinErrors is nil for none, the *Error itself for one, else Errors.
func joinErrors(es []*Error) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return Errors(es)
}

// NodeConfig is node.toml.
type NodeConfig struct {
	File   string
	Name   string
	Labels map[string]string
	// CapacityCPU and CapacityMem are node.capacity_cpu and capacity_mem
	// (0: the host's, filled by the daemon).
	CapacityCPU            MilliCPU
	CapacityMem            Bytes
	ReadyPeriod            time.Duration // default 16s
	ReadyFastAck           bool          // node.ready_fast_ack (default false)
	MaintenanceGracePeriod time.Duration // default 60s
	RejoinGracePeriod      time.Duration // default 90s
	SplitAction            string        // crash | reboot | stop | disabled (default crash)
	// MonitorInterval is how often monitored resources are checked (default 5s).
	MonitorInterval time.Duration
	// CheckInterval is how often the other resources are checked (default 60s).
	CheckInterval time.Duration
	// OCFRoot is the root of the OCF resource agents (default /usr/lib/ocf).
	OCFRoot string
	// ContainerEnv is added to the environment of every container engine
	// call (node.container_env).
	ContainerEnv map[string]string
	// CrashCommand and RebootCommand are the node actions crash and
	// reboot, run with /bin/sh -c (defaults: sysrq c and b).
	CrashCommand  string
	RebootCommand string
	// MetricsAddr is where /metrics is served ("" for none).
	MetricsAddr string
	HB          HBConfig
	// WatchdogDevice is node.watchdog_device ("" for none).
	WatchdogDevice string
	// Guard is node.guard (default true); GuardLease node.guard_lease
	// (default 7s): the node guard (config/guard.go).
	Guard      bool
	GuardLease time.Duration
	// MetricsAllow are the addresses and prefixes that may connect to
	// MetricsAddr (every address when empty).
	MetricsAllow []string
	// WebAddr is where the web view is served ("" for none; a missing
	// host is 127.0.0.1: WebListenAddr); WebTokenFile holds its access
	// token; WebTLSCert and WebTLSKey serve it over HTTPS (config/web.go).
	WebAddr, WebTokenFile, WebTLSCert, WebTLSKey string
	// Hooks are the [hook.NAME] sections, sorted by name.
	Hooks []Hook
	// lines locates the keys of node.toml for the checks against cluster.toml.
	lines *lineIndex
}

// Hook is one [hook.NAME] section of node.toml: a command run on events.
type Hook struct {
	Name    string
	Events  []string // event kinds, or "*"
	Command string
	Timeout time.Duration
}

// HBConfig is the [hb] section of node.toml.
type HBConfig struct {
	Addr     string        // default "0.0.0.0"
	Port     int           // default 10000
	Timeout  time.Duration // default 15s
	Interval time.Duration // default 5s
	// Disk is [hb.disk].
	Disk HBDiskConfig
}

// HBDiskConfig is the [hb.disk] section of node.toml.
type HBDiskConfig struct {
	Path    string        // "" for no disk heartbeat
	Fence   bool          // default false
	Timeout time.Duration // default 10s
}

// ClusterConfig is cluster.toml.
type ClusterConfig struct {
	File   string
	Name   string
	Secret string // 64 hex chars; never logged or printed
	Quorum bool
	// InsecureNoSecret lets a cluster of several members run without a
	// secret (tests only).
	InsecureNoSecret bool
	// Nodes are the members, sorted by name.
	Nodes       []Member
	Arbitrators []Arbitrator // sorted by name
	// Stonith are the fence commands, by node name ([stonith.NODE]).
	Stonith map[string]Stonith
	// NodeKeys are the members' public keys ([node_keys]): 32 bytes of an
	// X25519 public key by member name; nil without the section.
	NodeKeys map[string][]byte
	// NodeKeysMode is how the heartbeat uses them: "require", "send" or
	// "accept" (the migration steps).
	NodeKeysMode string
	// AdminKeys are the admins' Ed25519 public keys ([admin_keys]) by
	// name; nil without the section: service configs need no signature.
	AdminKeys map[string]ed25519.PublicKey
	// explicit is set when [nodes] lists members (not the lone default).
	explicit bool
	lines    *lineIndex
}

// Member is one [nodes] entry.
type Member struct {
	Name string
	Addr string // host:port of its heartbeat: its first link
	// Links are the host:port of each of its heartbeat links, in order
	// (Links[0] == Addr); nil means the one link Addr.
	Links []string
}

// LinkAddrs returns the host:port of each heartbeat link of m.
func (m Member) LinkAddrs() []string {
	if len(m.Links) > 0 {
		return m.Links
	}
	return []string{m.Addr}
}

// Arbitrator is one [arbitrator.NAME] section.
type Arbitrator struct {
	Name    string
	URI     string
	Weight  int
	Timeout time.Duration
	// Key is a one-vote arbitrator's public key as written (base64);
	// PubKey its 32 bytes, nil without one.
	Key    string
	PubKey []byte
}

// Stonith is one [stonith.NODE] section: how to fence NODE.
type Stonith struct {
	Node    string
	Command string
	Timeout time.Duration
}

// NodeNames returns the member names, sorted.
func (c *ClusterConfig) NodeNames() []string {
	out := make([]string, len(c.Nodes))
	for i, m := range c.Nodes {
		out[i] = m.Name
	}
	return out
}

// ServiceConfig is services/NAME.toml, validated. String values are kept
// unexpanded here; ForNode expands the references for one node.
type ServiceConfig struct {
	File string
	Name string
	// Raw is the file content as installed.
	Raw []byte
	// RunDigest is the digest of what runs (Raw less the orchestration
	// keywords: OrchestrationKeywords), set by ParseService.
	RunDigest string
	// Signature is the admin signature of Raw, set once checked against
	// cluster.toml's [admin_keys] (VerifyService); nil when not checked.
	Signature *Signature

	Nodes      []string // as written; "*" means every cluster node (see NodeList)
	Topology   string   // failover | flex
	FlexTarget int      // flex: instances to keep up (CountAll: "all")
	FlexMin    int      // flex: below it the service is down
	FlexMax    int      // flex: never more up (0 in the file: FlexTarget; set by ParseService)
	// RequestCPU and RequestMem are what one instance needs of a node's
	// capacity (0: no request).
	RequestCPU       MilliCPU
	RequestMem       Bytes
	Orchestrate      string // no | start | ha
	Placement        string // nodes order | load avg | spread | score | none
	Constraints      string // source text, "" for none
	HardAffinity     []string
	HardAntiAffinity []string
	SoftAffinity     []string
	SoftAntiAffinity []string
	Parents          []string // "svc" or "svc@node"
	Children         []string
	MonitorAction    string // none | freezestop | switch | crash | reboot
	Priority         int    // default 100
	MultipleActive   string // stop_others | freeze | warn

	// The rollout policy (svcmgr rollout, docs/behaviour.md 11).
	UpdateParallelism         int
	UpdateDelay               time.Duration
	UpdateOrder               string // stop-first, start-first (flex, flex_max - flex_target >= update_parallelism)
	UpdateMonitor             time.Duration
	UpdateMaxFailureRatioText string  // as written
	UpdateMaxFailureRatio     float64 // parsed from it, 0 to 1
	UpdateFailureAction       string  // rollback | pause | continue
	UpdateDownNodes           string  // wait | skip

	// Constraint is the compiled constraints expression, nil when none.
	Constraint *constraints.Program

	// Resources in start order: ip first, then fs, then ocf, then app; within a type
	// by name.
	Resources []ResourceConfig
}

// ResourceConfig is one [TYPE.NAME] section.
type ResourceConfig struct {
	RID  string // "TYPE#NAME"
	Type string // "app" | "ip" | "fs" | "ocf" | "container"
	Name string

	// common keywords
	Monitor      bool
	Restart      int
	RestartDelay time.Duration
	// RestartDelayMax caps the ladder's backoff (0: RestartDelay, no
	// backoff); RestartWindow is the window its restarts count over (0:
	// every restart since the last reset).
	RestartDelayMax time.Duration
	RestartWindow   time.Duration
	Optional        bool
	Disable         bool

	// app
	Start   string
	Stop    string
	Check   string
	Info    string
	Timeout time.Duration // per action, default 30s

	// ip
	IPName  string
	IPDev   string
	Netmask string
	// ProbeTimeout is how long the start waits for another holder of the
	// address to answer (default 300ms).
	ProbeTimeout time.Duration

	// fs
	Dev    string
	Mnt    string
	FSType string // the type keyword (mount -t)
	MntOpt string
	// ForceUnmount kills the processes that hold the filesystem when the
	// unmount finds it busy.
	ForceUnmount bool

	// ocf
	Agent  string            // "PROVIDER:TYPE" as written
	Params map[string]string // OCF_RESKEY_*
	// StartTimeout, StopTimeout and MonitorTimeout are the per action time
	// limits; 0: Timeout when TimeoutSet, else the agent's advice.
	StartTimeout   time.Duration
	StopTimeout    time.Duration
	MonitorTimeout time.Duration
	// TimeoutSet is true when the section sets timeout itself (not a
	// keyword: the ocf driver prefers the agent's advice to the default).
	TimeoutSet bool
	// container (StopTimeout above is its stop_timeout too)
	Engine       string // podman or docker
	Image        string
	Rootfs       string
	Command      []string
	Entrypoint   string
	ContainerEnv map[string]string // its env keyword
	Volumes      []string
	User         string
	ReadOnly     bool
	Memory       string
	CPUs         string
	Pull         string // never | missing | always
	Network      string // host
	EnvFile      string
	CapAdd       []string
	CapDrop      []string
	Healthcheck  string // the health command; "" none
	// not built yet (refused unless left at their default)
	Ports []string

	// StopLimit is the time limit of the resource's stop when it is not
	// Timeout (0): set by the shell for an ocf resource whose agent
	// advises its stop timeout (StopBound).
	StopLimit time.Duration
}

// NodeList returns the service's candidate nodes in priority order, with
// "*" replaced by every cluster node (sorted by name) and duplicates dropped.
func (s *ServiceConfig) NodeList(clusterNodes []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range s.Nodes {
		if n == "*" {
			for _, c := range clusterNodes {
				add(c)
			}
			continue
		}
		add(n)
	}
	return out
}

// HasNode reports whether node is a candidate of the service.
func (s *ServiceConfig) HasNode(node string, clusterNodes []string) bool {
	for _, n := range s.NodeList(clusterNodes) {
		if n == node {
			return true
		}
	}
	return false
}
