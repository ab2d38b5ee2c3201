package config

import (
	"sort"
	"strings"
)

// Type is the type of a keyword's value.
type Type int

// The keyword types.
const (
	TypeString   Type = iota
	TypeInt           // a TOML integer
	TypeBool          // true or false
	TypeDuration      // a Go duration string ("16s", "500ms") or an integer of seconds
	TypeList          // an array of strings (a string is split on blanks)
	TypeMap           // a table of strings
	TypeEnum          // a string among Allowed
	TypeCount         // a TOML integer, or the string "all" (CountAll)
	TypeCPU           // a number of cores: 2, 0.5 or "500m" (MilliCPU)
	TypeSize          // an amount of memory: bytes, or "512MiB", "2G" (Bytes)
)

// CountAll is the Go value of a TypeCount keyword set to "all".
const CountAll = -1

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeBool:
		return "bool"
	case TypeDuration:
		return "duration"
	case TypeList:
		return "list"
	case TypeMap:
		return "map"
	case TypeEnum:
		return "enum"
	case TypeCount:
		return "count"
	case TypeCPU:
		return "cpu"
	case TypeSize:
		return "size"
	}
	return "?"
}

// The section kinds of the keyword table. A kind is the first part of a
// section header: [node], [hb], [arbitrator.NAME], [app.NAME], ...
// SectionResource holds the keywords common to every resource type.
const (
	SectionNode       = "node"
	SectionHB         = "hb"
	SectionHBDisk     = "hb.disk"
	SectionCluster    = "cluster"
	SectionNodes      = "nodes"
	SectionNodeKeys   = "node_keys"
	SectionAdminKeys  = "admin_keys"
	SectionArbitrator = "arbitrator"
	SectionStonith    = "stonith"
	SectionDefault    = "DEFAULT"
	SectionResource   = "resource"
	SectionApp        = "app"
	SectionIP         = "ip"
	SectionFS         = "fs"
	SectionOCF        = "ocf"
	SectionContainer  = "container"
	SectionHook       = "hook"
)

// AnyKey is the Key of a keyword whose name is free (the [nodes] members).
const AnyKey = "<nodename>"

// Keyword is one entry of the keyword table.
type Keyword struct {
	Section string // a Section* kind
	Key     string
	Type    Type
	// Default is the value when the keyword is not set, written as on the
	// command line of "svcmgr set" (lists: blank separated). "" is the
	// empty value of the type (0, false, "", [], {}).
	Default  string
	Allowed  []string // for TypeEnum
	Required bool
	// NoExpand: references are not expanded in this value (constraints:
	// {nodename} there is the OpenSVC constraint syntax, evaluated per node).
	NoExpand bool
	// Field is the struct field the value is stored in (NodeConfig,
	// HBConfig, ClusterConfig, Arbitrator, ServiceConfig or ResourceConfig
	// after the section kind). "" for the [nodes] members.
	Field string
	Doc   string
	// NotYet names the work that will make the keyword act, in words:
	// until then a value other than the default is refused at load, so that
	// no documented knob is silently read by nothing.
	NotYet string
}

// Keywords is the keyword table: it drives parsing, defaults, validation,
// svcmgr get/set/unset and docs/keywords.md.
var Keywords = []Keyword{
	// node.toml
	{Section: SectionNode, Key: "name", Type: TypeString, Field: "Name",
		Doc: "The node name. Default: the short host name, lowercased."},
	{Section: SectionNode, Key: "labels", Type: TypeMap, Field: "Labels",
		Doc: "Free labels, seen by the constraints as `node.labels` (`env` also as `node.env`). Example: `{ env = \"PRD\", az = \"a\" }`."},
	{Section: SectionNode, Key: "capacity_cpu", Type: TypeCPU, Default: "0", Field: "CapacityCPU",
		Doc: "The CPU cores this node offers to the services' requests (`request_cpu`): a number with at most 3 decimals (`16`, `7.5`) or thousandths of a core (`\"7500m\"`). 0 (the default): the host's number of CPUs. Published to the peers; placement never starts an instance on a node where the requests of the instances running, stopping, starting or claiming there (every service), plus this one, exceed it (docs/behaviour.md 1.8). Read at start."},
	{Section: SectionNode, Key: "capacity_mem", Type: TypeSize, Default: "0", Field: "CapacityMem",
		Doc: "The memory this node offers to the services' requests (`request_mem`): bytes, or a number with a unit (`\"60GiB\"`, `\"64G\"`; KiB, MiB, GiB, TiB are powers of 1024, KB, MB, GB, TB of 1000). 0 (the default): the host's total memory (`MemTotal` of /proc/meminfo). Keep some for the system: e.g. the host's memory less what the OS and the daemon use. Read at start."},
	{Section: SectionNode, Key: "ready_period", Type: TypeDuration, Default: "16s", Field: "ReadyPeriod",
		Doc: "The contest window: how long an instance stays `ready` before the orchestrator starts it, so that a better placed peer can claim the start. Must be more than 0 (0 is refused: without a window two nodes could start the same service); for a fast failover use a short one such as `500ms`, longer than a delta takes to reach every peer."},
	{Section: SectionNode, Key: "ready_fast_ack", Type: TypeBool, Default: "false", Field: "ReadyFastAck",
		Doc: "Fast-ack ready window: this node publishes, for each claim of a peer it sees and does not contest, an ack naming the claim (`ready_ack` in its instance); a claim of its own starts as soon as every live node of the service acked it, before `ready_period` ends (a flex service's several claims at once too). With `cluster.quorum = true` only while the node's side holds the quorum. Set it on every node: a node without it never acks, and the claims it must ack wait the whole window (safe, slower). The mechanism and its safety argument: docs/operations.md, \"Fast ack\"."},
	{Section: SectionNode, Key: "maintenance_grace_period", Type: TypeDuration, Default: "60s", Field: "MaintenanceGracePeriod",
		Doc: "How long the peers of a node in `maintenance` wait for it to come back before they take over its services."},
	{Section: SectionNode, Key: "rejoin_grace_period", Type: TypeDuration, Default: "90s", Field: "RejoinGracePeriod",
		Doc: "How long a starting daemon waits for its peers (state `rejoin`) before it orchestrates alone."},
	{Section: SectionNode, Key: "split_action", Type: TypeEnum, Default: "crash", Allowed: []string{"crash", "reboot", "stop", "disabled"}, Field: "SplitAction",
		Doc: "What the node does when it loses the quorum. `stop`: stop every local instance at once and freeze the node (the self-fence used by the tests); that split freeze ends by itself once the node holds the quorum again or the cluster is whole (`nodemgr thaw` ends it sooner); `crash` and `reboot` run the node action (act on the real kernel by default); `disabled`: log only. Read only with `cluster.quorum = true`. A `stop` that has not ended by the self-stop deadline escalates to `crash` (docs/operations.md, \"Split brain\")."},
	{Section: SectionNode, Key: "container_env", Type: TypeMap, Field: "ContainerEnv",
		Doc: "Environment variables added to every call of the container engine of the `[container.NAME]` resources, over the daemon's own environment: the engine's configuration, such as `{ CONTAINERS_STORAGE_CONF = \"/etc/haven/storage.conf\", CONTAINERS_CONF = \"/etc/haven/containers.conf\" }` for podman, `{ DOCKER_HOST = \"unix:///run/haven-docker.sock\" }` for docker, so that several nodes on one host (a test bed) each have their own storage and never see each other's containers."},
	{Section: SectionNode, Key: "crash_command", Type: TypeString, Default: "echo c > /proc/sysrq-trigger", Field: "CrashCommand",
		Doc: "DANGEROUS DEFAULT: the command of the node action `crash` (a service's `monitor_action = \"crash\"`), run with `/bin/sh -c` as root; the default crashes the kernel at once (sysrq `c`: no sync, no clean stop). Tests set a harmless command, e.g. `touch /tmp/crashed`. Each run is logged at error level with its reason and bounded by a 30s timeout."},
	{Section: SectionNode, Key: "reboot_command", Type: TypeString, Default: "echo b > /proc/sysrq-trigger", Field: "RebootCommand",
		Doc: "DANGEROUS DEFAULT: the command of the node action `reboot` (a service's `monitor_action = \"reboot\"`), run with `/bin/sh -c` as root; the default reboots at once (sysrq `b`: no sync, no clean stop of the services). Tests set a harmless command. Logged and bounded like `crash_command`."},
	{Section: SectionNode, Key: "guard", Type: TypeBool, Default: "true", Field: "Guard",
		Doc: "The node guard: a small process the daemon starts (the program `haven-guard`, beside `nodemgr`: a daemon that does not find it refuses to start; `nodemgr guard status`), which survives the daemon and ends the failover services of this node (SIGKILL of every process of their cgroups, removal of their ip resources' addresses, lazy unmount of their fs resources) when the daemon stops renewing its lease: the daemon was killed, hangs or is paused (SIGSTOP, a frozen VM), or lost the quorum. The peers then take the services over without trusting the lost daemon's own stop (docs/behaviour.md 3.1, docs/operations.md \"The node guard\"). `false`: no guard (the previous behaviour: a killed daemon leaves its services running)."},
	{Section: SectionNode, Key: "guard_lease", Type: TypeDuration, Default: "12s", Field: "GuardLease",
		Doc: "How long the guard's lease lasts (the daemon renews it from its event loop while the node may run its services, when that moves the lease's end: with `cluster.quorum = false` once 2s of it have passed, at most half of it): a daemon that does not renew it for this long has its failover services ended by the guard. A daemon restarted within it less those 2s (systemd's `Restart=`, an upgrade) stops nothing. With `cluster.quorum = true` the lease counts from the send time of this node's newest beat that enough peers acknowledged for a quorum (or the end of a one-vote arbitrator's lease it counts on), not from the renewal: a node cut off has its services ended this long (plus the guard's 2.5s bound) after its peers last heard it, and the peers take them over that long after they last heard it, less their hb.timeout, plus a margin (docs/behaviour.md 3.1). At least 2s; with `cluster.quorum = true`, more than twice the beat period plus 1s (the acknowledged beat is up to two periods old), and more than the longest arbitrator `timeout` plus 1s (a vote waiting for the arbitrators renews nothing)."},
	{Section: SectionNode, Key: "watchdog_device", Type: TypeString, Field: "WatchdogDevice",
		Doc: "A watchdog device (`/dev/watchdog`: a hardware watchdog, or the `softdog` module): the daemon opens it at start and pets it from its event loop while the loop runs, so that a daemon hung or paused (SIGSTOP, a frozen VM) for longer than the watchdog's timeout gets its host reset by the kernel or the hardware; a clean stop disarms it (magic close). Empty (the default): none. The start is refused (exit 2) when it is no watchdog (not a character device, or the watchdog ioctls fail: `/dev/null`, a regular file, a FIFO) or when its timeout is at or above the shortest fence wait of `hb.disk.fence`. The watchdog's timeout adds to the self-stop deadline the peers wait for (docs/operations.md, \"Watchdog\")."},
	{Section: SectionNode, Key: "monitor_interval", Type: TypeDuration, Default: "5s", Field: "MonitorInterval",
		Doc: "Check period of the monitored resources (`monitor = true`)."},
	{Section: SectionNode, Key: "check_interval", Type: TypeDuration, Default: "60s", Field: "CheckInterval",
		Doc: "Check period of the other resources (a full status check of every local instance). The checks of a node run in batches: each is due at the start of the twelfth of the interval (5 s of the default minute) that holds its interval's end, so it comes at most that much early, never late; at most four checks a CPU run at once, the others in turn (docs/operations.md)."},
	{Section: SectionNode, Key: "ocf_root", Type: TypeString, Default: "/usr/lib/ocf", Field: "OCFRoot",
		Doc: "The OCF root of the `[ocf.NAME]` resources: their agents are `resource.d/PROVIDER/TYPE` under it, the shell functions they source `lib/heartbeat` (Debian's resource-agents package installs them under /usr/lib/ocf). An absolute path."},
	{Section: SectionNode, Key: "metrics_addr", Type: TypeString, Field: "MetricsAddr",
		Doc: "Where the daemon serves its Prometheus metrics, at `http://ADDR/metrics` (see docs/metrics.md): `host:port`, the host an IP address, `localhost` or empty for every address (`\":9477\"`). Plain HTTP without authentication: bind it to an address only the scraper reaches. Empty (the default): no metrics listener. An address that cannot be listened on stops the daemon at start, naming it."},
	{Section: SectionNode, Key: "metrics_allow", Type: TypeList, Field: "MetricsAllow",
		Doc: "The addresses that may connect to `metrics_addr`: IP addresses and CIDR prefixes (`[\"10.0.0.5\", \"192.168.1.0/24\"]`). A connection from any other address is closed at once, before anything is read, and logged (WARN, rate-limited). Empty (the default): every address that reaches the listener."},
	{Section: SectionNode, Key: "web_addr", Type: TypeString, Field: "WebAddr",
		Doc: "Where the daemon serves its read-only web view (the cluster grid, a page per service, the events, updated live; docs/operations.md, \"Web view\"): `host:port`, the host an IP address or `localhost`; without a host (`\":8080\"`) it is `127.0.0.1`. An address other than the loopback needs `web_token_file` (the daemon refuses to start without it). Empty (the default): no web view. An address that cannot be listened on stops the daemon at start, naming it."},
	{Section: SectionNode, Key: "web_token_file", Type: TypeString, Field: "WebTokenFile",
		Doc: "A file holding the access token of the web view (one line, at least 16 characters and random-looking: a token of repeats, runs such as `abcd` or a repeated word is refused; `openssl rand -hex 24 > FILE` makes a good one; mode 0600, owned by root: a file other users may read is refused). When set, every page asks for it (a login form, then a cookie; or `Authorization: Bearer TOKEN`). Required when `web_addr` is not a loopback address. Read at start: restart the daemon after changing it."},
	{Section: SectionNode, Key: "web_tls_cert", Type: TypeString, Field: "WebTLSCert",
		Doc: "A PEM certificate (chain) file: the web view is served over HTTPS with it and `web_tls_key`. Set both or neither. Read at start."},
	{Section: SectionNode, Key: "web_tls_key", Type: TypeString, Field: "WebTLSKey",
		Doc: "The PEM private key of `web_tls_cert` (mode 0600: a key other users may read is refused)."},
	{Section: SectionHook, Key: "events", Type: TypeList, Required: true, Field: "Events",
		Doc: "The event kinds that run the hook, as `nodemgr events` names them (`failover`, `instance_monitor`, `peer_down`, ...; docs/operations.md lists them), or `[\"*\"]` for every event. An unknown kind is an error at load."},
	{Section: SectionHook, Key: "command", Type: TypeString, Required: true, Field: "Command",
		Doc: "The command run for each matching event, split like an app command (no shell: write `sh -c '...'` for one). It gets the event as one JSON object on its standard input and in `HAVEN_EVENT_*` environment variables (docs/operations.md, \"Event hooks\"). Hooks run one at a time, outside the event loop, in a bounded queue: when it is full new events are dropped for the hooks (counted in `haven_hook_dropped_total` and logged), the daemon never waits for a hook."},
	{Section: SectionHook, Key: "timeout", Type: TypeDuration, Default: "10s", Field: "Timeout",
		Doc: "How long the command may run: then its whole process group is killed (SIGTERM, SIGKILL 2s later) and the failure logged. More than 0."},
	{Section: SectionHB, Key: "addr", Type: TypeString, Default: "0.0.0.0", Field: "Addr",
		Doc: "The address the heartbeat listens on: a wildcard (`0.0.0.0`, `::`) or the host of this node's `[nodes]` entry (checked when cluster.toml has a `[nodes]` section). When that entry lists several addresses (one per link), the heartbeat binds each of them instead, and this is the wildcard or the first one."},
	{Section: SectionHB, Key: "port", Type: TypeInt, Default: "10000", Field: "Port",
		Doc: "The port the heartbeat listens on, 1 to 65535: the port of this node's `[nodes]` entry (checked when cluster.toml has a `[nodes]` section); with several addresses, the port of the first one (each link listens on the port of its own address)."},
	{Section: SectionHB, Key: "timeout", Type: TypeDuration, Default: "15s", Field: "Timeout",
		Doc: "A peer silent this long is declared down. A crash is declared between `timeout` minus the beat period and `timeout` after it (see `interval`)."},
	{Section: SectionHB, Key: "interval", Type: TypeDuration, Default: "5s", Field: "Interval",
		Doc: "The beat period (or `timeout`/3 if shorter): when nothing changes, each node sends every other member one small beat (about 100 bytes: its run, the generation and a digest of its data) this often, whatever the number of services. Changes go at once as deltas; a full copy of a node's data goes only to a peer that needs it (it joined, or lacks or doubts a generation). Must be shorter than `timeout`; the detection precision is this period. The nodes beat in step: a node whose round is due within half a period of a peer's beat sends it then (never later than its period), so that an idle node wakes once a period."},
	{Section: SectionHBDisk, Key: "path", Type: TypeString, Field: "Path",
		Doc: "The disk heartbeat (docs/operations.md, \"Disk heartbeat\"): a small block device shared by every node, or a file on storage every node mounts, the same path on every node (at least 8 KiB per member). Each member writes its slot (4 KiB, in the order of the sorted `[nodes]` names) every beat period with `O_DSYNC` (and `O_DIRECT` where the file system takes it) and reads the others'; each block is sealed with a key derived from the cluster secret. Empty (the default): no disk heartbeat. Read at start."},
	{Section: SectionHBDisk, Key: "fence", Type: TypeBool, Default: "false", Field: "Fence",
		Doc: "SBD-style fencing through the disk (needs `path` and `cluster.quorum = true`): a survivor fences a lost member that has no `[stonith.NODE]` command by writing a fence into its slot; a node that reads a fence aimed at its run runs `node.crash_command` at once. The fence is done when the node's slot acknowledges it, or when its slot has not advanced for 2 x `timeout` + the self-stop deadline (docs/operations.md, \"SBD-style fencing\"). When false the disk is one more heartbeat link."},
	{Section: SectionHBDisk, Key: "timeout", Type: TypeDuration, Default: "10s", Field: "Timeout",
		Doc: "Each read and write of the disk heartbeat is waited for at most this long (a disk that blocks never blocks the daemon), and a disk without a good read and write for this long is lost (logged; with `fence = true` a node that lost the disk and does not hear a majority of the members applies its `split_action`). Must be longer than the beat period."},

	// cluster.toml
	{Section: SectionCluster, Key: "name", Type: TypeString, Default: "default", Field: "Name",
		Doc: "The cluster name."},
	{Section: SectionCluster, Key: "secret", Type: TypeString, Field: "Secret",
		Doc: "64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`: the key that encrypts and authenticates all cluster traffic. Required when [nodes] has more than one member (see `insecure_no_secret`). A cluster.toml holding it must not be readable by other users (mode 0600). Never printed. An obviously weak secret is refused: fewer than 16 distinct byte values among its 32 (all zeros, a repeated byte or short pattern) or bytes that step by a constant (`000102…`). Whoever holds it is root on every node: docs/security.md."},
	{Section: SectionCluster, Key: "insecure_no_secret", Type: TypeBool, Default: "false", Field: "InsecureNoSecret",
		Doc: "INSECURE, tests only. A cluster of more than one member refuses to start without a `secret`: anyone who can send a datagram to a heartbeat port could then install a service, whose commands run as root. `true` lets it run without one, with a warning at every start. Refused together with a `secret`."},
	{Section: SectionCluster, Key: "quorum", Type: TypeBool, Default: "false", Field: "Quorum",
		Doc: "When true, a node that loses sight of peers counts the votes: the members it hears (and that hear it) plus the weights of the arbitrators that answer. It survives if and only if they are more than half of the members plus every arbitrator's weight (a tie loses); otherwise it applies its `split_action` at once. The survivors take over a lost node's services only once it is fenced (`[stonith.NODE]`) or its self-stop deadline has passed (docs/operations.md, \"Split brain\")."},
	{Section: SectionNodes, Key: AnyKey, Type: TypeList,
		Doc: "One line per cluster member: `NAME = \"host:port\"` of its heartbeat, or a list `NAME = [\"ip:port\", \"ip:port\"]`, one address per network link (at most 8, each an IP address, every member listing as many, link 1 first): beats go out on every link, a peer is down only when every link is silent for `hb.timeout`, and a link down is an alarm, never a failover (docs/operations.md, \"Heartbeat links\"). When the section is missing or empty, the local node alone at 127.0.0.1:10000. The local node must be a member; names may not differ only in case; each member has its own host:port; the local node's entry, when a literal IP, must be an address of the host (checked at start)."},
	// per-node keys (docs/security.md, "Per-node keys")
	{Section: SectionCluster, Key: "node_keys_mode", Type: TypeEnum, Default: "require", Allowed: []string{"require", "send", "accept"}, Field: "NodeKeysMode",
		Doc: "How the heartbeat uses the members' keys of `[node_keys]` (read only when that section lists keys). `require`: every member has a key, and a frame from a member is accepted only when sealed with the key that the sender and this node alone derive from their key pairs (and the cluster secret); a frame sealed with the cluster secret alone is refused, so that a member cannot speak as another. The two others are the steps of turning keys on in a running cluster, one node at a time (docs/operations.md, \"Per-node keys\"): `accept` sends as without keys and accepts both kinds of frames; `send` seals with the pairwise key to every member that has one and accepts both kinds. Members without a key are accepted on the cluster secret alone in `accept` and `send` only. The disk heartbeat (`[hb.disk]`) follows the same mode: a node with its key tags its blocks for every listed member, and a listed member's block without a tag for this node is refused in `require` only (a bad tag in every mode: docs/security.md, \"The shared disk\")."},
	{Section: SectionNodeKeys, Key: AnyKey, Type: TypeString,
		Doc: "One line per member: `NAME = \"KEY\"`, the member's public key as `nodemgr key show` prints it on that member (X25519, 32 bytes in base64). Each node keeps its private key in `node.key` under its root (`/etc/haven/node.key`, mode 0600, made by `nodemgr key generate` at install; never copied to another host). With keys, a frame is sealed with a key only its sender and its receiver can derive: a member holding the secret and its own private key can no longer make the others accept a frame, or a block of the shared disk, as another member's (docs/security.md, \"Per-node keys\"). Every name must be a member, every key a valid X25519 public key, no two members the same key; the daemon refuses to start when its own entry is not the key of its `node.key`. Missing or empty: no per-node keys (the cluster secret alone)."},
	// admin-signed service configs (docs/security.md, "Admin-signed configs")
	{Section: SectionAdminKeys, Key: AnyKey, Type: TypeString,
		Doc: "One line per administrator: `NAME = \"KEY\"`, an Ed25519 public key as `svcmgr key generate` or `svcmgr key show` prints it (32 bytes in base64); the private key stays on the admin's workstation (never on a node). When the section lists a key, a node installs, relays and acts on a service config only when its last line is a valid signature by one of these keys over the text, the cluster name, the service name and a serial (`svcmgr sign`): a config from a peer, a file read at start-up or a create or edit made here without one is refused (`config_refused: unsigned`, `bad signature`, `unknown key`, or a serial older than the previous config's: `replayed`), and the last good config is kept. Once the cluster feature level is 2, a service's deletion and the admin targets that make the nodes act (start, stop, freeze, thaw, switch, takeover, giveback, a flex node's start or stop) need an admin's signature too (`svcmgr delete --key`, `svcmgr stop --key`...): a peer's unsigned one is refused (`config_refused: unsigned deletion`, `target_refused: unsigned`) and nothing acts on it. So a node's files no longer let their holder make the other nodes run a command, nor delete, stop or move a service (docs/security.md, \"Admin-signed deletions and targets\"). Names: letters, digits, `_ . -`; no two names the same key. Missing or empty: configs need no signature. Turning it on in a running cluster: docs/operations.md, \"Admin-signed configs\"."},
	{Section: SectionArbitrator, Key: "uri", Type: TypeString, Required: true, Field: "URI",
		Doc: "`http://` or `https://` URL answered with a 2xx, or `tcp://host:port` that accepts connections: a plain arbitrator, which votes for every node that reaches it; probed by each node when it loses sight of peers (and every 10s for the status). Or `haven://host:port`: Haven's one-vote arbitrator (`nodemgr arbitrator run` on a third host), which gives its vote to one partition at a time as a lease, so that a 2-node cluster fails over without a fence command; each node reports to it every second (docs/operations.md, \"The 2-node case\")."},
	{Section: SectionArbitrator, Key: "weight", Type: TypeInt, Default: "1", Field: "Weight",
		Doc: "The number of votes of the arbitrator."},
	{Section: SectionArbitrator, Key: "timeout", Type: TypeDuration, Default: "5s", Field: "Timeout",
		Doc: "How long to wait for the arbitrator's answer."},
	{Section: SectionArbitrator, Key: "key", Type: TypeString, Field: "Key",
		Doc: "A one-vote arbitrator's (`haven://`) public key, as `nodemgr arbitrator key show` prints it on the arbitrator's host (X25519, 32 bytes in base64). With it, and this node's own key (`node.key`), the node seals its reports with a key that only it and the arbitrator derive (from their two key pairs and the cluster secret), and reads only grants sealed so; the arbitrator, once its `arbitrator.toml` lists this node's public key, refuses reports as this node sealed with the cluster secret alone: a member can no longer report as another and move the vote (docs/security.md, \"The one-vote arbitrator's wire\"; the steps of turning it on: docs/operations.md, \"The 2-node case\"). Needs this node's `node.key`; refused on another kind of arbitrator. Missing: reports sealed with the cluster secret alone."},
	{Section: SectionStonith, Key: "command", Type: TypeString, Required: true, Field: "Command",
		Doc: "The fence command of node NODE (`[stonith.n1]`), run with `/bin/sh -c` by every survivor that holds the quorum before it takes over the services of NODE once lost, with HAVEN_FENCE_NODE=NODE set: e.g. an IPMI power off. With it, only a fence clears the takeover (not the self-stop deadline). Exit 0: NODE is fenced, the takeover goes on at once; otherwise the takeover stays blocked (monitor state `wait fence`) and the command is retried with a backoff (1s, doubling, at most 60s). Never run on a node that lost the quorum. When NODE may have kept the quorum too (2 nodes and an arbitrator both reach), the node running more services (at equal counts, the first by name) fences at once and the other at NODE's self-stop deadline, so that they never fence each other and the services stay where they run."},
	{Section: SectionStonith, Key: "timeout", Type: TypeDuration, Default: "30s", Field: "Timeout",
		Doc: "The time limit of one run of the fence command: a run that outlasts it is killed and counts as a failure."},

	// services/NAME.toml
	{Section: SectionDefault, Key: "nodes", Type: TypeList, Field: "Nodes",
		Doc: "The candidate nodes, in priority order. `*` means every cluster node (sorted by name). When empty, `svcmgr create` sets it to the node it runs on."},
	{Section: SectionDefault, Key: "topology", Type: TypeEnum, Default: "failover", Allowed: []string{"failover", "flex"}, Field: "Topology",
		Doc: "`failover`: one instance up, on one node at a time. `flex`: `flex_target` instances up at once, at most one per node, each node of `nodes` a candidate as for a failover service (placement, constraints, affinities, frozen and drained nodes); needs `orchestrate = \"ha\"`. The best-ranked candidates without an instance start one until the target is up, a lost or failed instance is replaced on another candidate, the instances beyond the target stop on the least preferred nodes first; with `cluster.quorum` on, never more than `flex_max` are up at any instant (docs/behaviour.md, section 10). `flex_target = \"all\"` is the global mode: one instance on every candidate node, each started at once. `svcmgr scale --to N` changes the count; `stop` stops and holds every instance, `start` lets them run again; `stop --node N` stops and holds N's instance (the count refills elsewhere), `start --node N` lets it run there again; `switch`, `takeover` and `giveback` do not apply."},
	{Section: SectionDefault, Key: "flex_target", Type: TypeCount, Default: "1", Field: "FlexTarget",
		Doc: "With `topology = \"flex\"`: how many instances to keep up, at least 1, at most `flex_max` and at most the number of the service's nodes. `\"all\"` is the global mode: one instance on every candidate node (`nodes`, with `[\"*\"]` every member; alive, not frozen, drained or in maintenance, meeting the constraints and hard affinities), started at once on a node that joins, thaws or meets the constraints, stopped where the constraints no longer hold (not on a frozen node), replaced nowhere else (docs/behaviour.md 10.8)."},
	{Section: SectionDefault, Key: "flex_min", Type: TypeInt, Default: "1", Field: "FlexMin",
		Doc: "With `topology = \"flex\"`: below this many instances up the service is `down`; from it to below `flex_target` it is `warn`, at the target `up`. At most `flex_target`."},
	{Section: SectionDefault, Key: "flex_max", Type: TypeInt, Default: "0", Field: "FlexMax",
		Doc: "With `topology = \"flex\"`: never more instances up than this, with `cluster.quorum` on (through splits, crashes, restarts and paused daemons). Default (0): `flex_target`. At least `flex_target`, at most the number of the service's nodes (with `nodes = [\"*\"]`, the cluster's members, checked by `create` and `set`). With `flex_target = \"all\"` it is the number of the service's nodes and may not be set."},
	{Section: SectionDefault, Key: "request_cpu", Type: TypeCPU, Default: "0", Field: "RequestCPU",
		Doc: "The CPU cores one instance of the service needs (`0.5`, `2`, `\"250m\"`), for failover and flex services. Placement starts an instance only on a node whose `capacity_cpu` holds the requests of every instance running, stopping, starting or claiming there (every service) plus this one; a running instance is never stopped for it. 0 (the default): no request, the service is never held back by capacity. A request, not a limit: nothing caps what the instance uses (docs/operations.md, \"Sizing: requests and capacity\")."},
	{Section: SectionDefault, Key: "request_mem", Type: TypeSize, Default: "0", Field: "RequestMem",
		Doc: "The memory one instance of the service needs (`\"512MiB\"`, `\"2G\"`), checked against the nodes' `capacity_mem` as `request_cpu` is against `capacity_cpu`. 0 (the default): no request."},
	{Section: SectionDefault, Key: "update_parallelism", Type: TypeInt, Default: "1", Field: "UpdateParallelism",
		Doc: "`svcmgr rollout`: how many instances restart on the new config at once (a batch), at least 1. The batches follow the placement order of the nodes running an instance when the rollout begins; a batch starts once every instance of the batches before it stayed up for `update_monitor` (docs/behaviour.md, section 11). A flex service keeps at least its instances up minus this many during a rollout."},
	{Section: SectionDefault, Key: "update_delay", Type: TypeDuration, Default: "0", Field: "UpdateDelay",
		Doc: "`svcmgr rollout`: the pause between the end of a batch and the start of the next."},
	{Section: SectionDefault, Key: "update_order", Type: TypeEnum, Default: "stop-first", Allowed: []string{"stop-first", "start-first"}, Field: "UpdateOrder",
		Doc: "`svcmgr rollout`: `stop-first` restarts each instance of a batch in place (a stop, then a start on the new config). `start-first` (flex services with `flex_max` above `flex_target`, at least `update_parallelism` above): each node's old instance leaves its slot to a replacement that placement starts on a spare candidate, and stops once the replacement is up; without a spare candidate the turn restarts in place (docs/behaviour.md 11.5)."},
	{Section: SectionDefault, Key: "update_monitor", Type: TypeDuration, Default: "5s", Field: "UpdateMonitor",
		Doc: "`svcmgr rollout`: how long a restarted instance must stay up to count as a success; one that fails its restart, or goes down within this time, counts as a failure."},
	{Section: SectionDefault, Key: "update_max_failure_ratio", Type: TypeString, Default: "0", Field: "UpdateMaxFailureRatioText",
		Doc: "`svcmgr rollout`: the share of the rollout's instances (a number from 0 to 1) that may fail before `update_failure_action` is taken; 0: the first failure takes it."},
	{Section: SectionDefault, Key: "update_failure_action", Type: TypeEnum, Default: "rollback", Allowed: []string{"rollback", "pause", "continue"}, Field: "UpdateFailureAction",
		Doc: "`svcmgr rollout`: what happens when more instances failed than `update_max_failure_ratio` allows. `rollback` (the default): no further instance restarts; one node (the one that began the rollout, else the first of its nodes alive) installs the previous config again as a new version (every node keeps it; an admin-signed one keeps its signature) and rolls it out to the instances that run another config, as a rollout marked as a rollback whose own failures pause it; `rollout --wait` exits 1 naming the failed nodes, their causes and the rollback. It is not made when the config changed again since the rollout began (a newer edit supersedes it): the rollout is then paused. `pause`: no further instance restarts; `rollout status` names the failed nodes and their causes, and `rollout --wait` exits 1; a new `svcmgr rollout` (after a fix of the config) or `svcmgr rollback` goes on. `continue`: the next batches go on."},
	{Section: SectionDefault, Key: "update_down_nodes", Type: TypeEnum, Default: "wait", Allowed: []string{"wait", "skip"}, Field: "UpdateDownNodes",
		Doc: "`svcmgr rollout`: what a node down when its turn comes does to the rollout. `wait` (the default): its batch and every later one wait until it is back. `skip`: its turn is skipped (not failed: it counts for no failure ratio) and the next batches go on; it takes its turn when it returns (after any batch under way ended), and the rollout is done only then. A node counts the down nodes skipped only while it sees more than half of the rollout's nodes alive, itself included (a node cut off from the others never restarts beside them): in a two-node rollout, skip waits as wait does (docs/behaviour.md, section 11)."},
	{Section: SectionDefault, Key: "orchestrate", Type: TypeEnum, Default: "no", Allowed: []string{"no", "start", "ha"}, Field: "Orchestrate",
		Doc: "`no`: the daemon starts nothing by itself; `start`: start the service once on the placement leader; `ha`: also fail it over when its instance or node fails."},
	{Section: SectionDefault, Key: "placement", Type: TypeEnum, Default: "nodes order", Allowed: []string{"nodes order", "load avg", "spread", "score", "none"}, Field: "Placement",
		Doc: "How the candidate nodes are ranked: in `nodes` order, by 15 minutes load average, spread by a hash of the service name, by a score of load and free memory, or not at all."},
	{Section: SectionDefault, Key: "constraints", Type: TypeString, NoExpand: true, Field: "Constraints",
		Doc: "A boolean expr-lang expression a node must satisfy to be a candidate, over `nodename`, `node.labels`, `node.env`, `node.load15`, `node.mem_avail_pct`; e.g. `node.labels.env in [\"DEV\", \"TST\"]`. The OpenSVC form `$(\"{nodename}\"==\"n1\" or \"{node.env}\" in (DEV, TST))` is accepted too. Compiled at load; references are not expanded here."},
	{Section: SectionDefault, Key: "hard_affinity", Type: TypeList, Field: "HardAffinity",
		Doc: "Services this one starts only next to: a node is a candidate only while every listed service runs there. A gate on starts, not a bond: when a listed service moves later (a switch, a failover), this one keeps running where it is, and follows only if it restarts (svcmgr explain shows the rule's verdict per node). create and set refuse a service that does not exist in the cluster (it would never start)."},
	{Section: SectionDefault, Key: "hard_anti_affinity", Type: TypeList, Field: "HardAntiAffinity",
		Doc: "Services this one never starts next to: a node where a listed service runs (or is being started) is no candidate. Like hard_affinity, a gate on starts: a listed service started later beside this one does not move it."},
	{Section: SectionDefault, Key: "soft_affinity", Type: TypeList, Field: "SoftAffinity",
		Doc: "Services this one prefers to run with."},
	{Section: SectionDefault, Key: "soft_anti_affinity", Type: TypeList, Field: "SoftAntiAffinity",
		Doc: "Services this one prefers to run away from."},
	{Section: SectionDefault, Key: "parents", Type: TypeList, Field: "Parents",
		Doc: "Services (`svc`, or `svc@node` for one instance) that must be up before this one starts. create and set refuse a parent that is no service of the cluster, and parents that lead back to this service (a cycle: none would ever start)."},
	{Section: SectionDefault, Key: "children", Type: TypeList, Field: "Children",
		Doc: "Services (`svc` or `svc@node`) that must be stopped before this one stops."},
	{Section: SectionDefault, Key: "monitor_action", Type: TypeEnum, Default: "none", Allowed: []string{"none", "freezestop", "switch", "crash", "reboot"}, Field: "MonitorAction",
		Doc: "What the daemon does when a monitored resource of the instance is down and its `restart`s are spent (monitor state `tocing`), only if another candidate node exists (up, not frozen, passing the constraints and hard affinities): `freezestop` freezes and stops the local instance; `switch` stops it and excludes this node from the candidates (instance `excluded`) until `svcmgr clear` or until the service is up on another node, so the next leader takes it and it never comes back by itself; `crash` and `reboot` run node.toml's `crash_command` / `reboot_command`. With `none`, or no other candidate: an event and a log line, and the daemon restarts nothing more there (instance `gave_up`) until `svcmgr clear`, a start, or the resource is up again; the instance is no placement candidate meanwhile, so another candidate takes the service once it is down everywhere. See docs/operations.md, \"Resource failures\"."},
	{Section: SectionDefault, Key: "priority", Type: TypeInt, Default: "100", Field: "Priority",
		Doc: "Start order among the services of a node: lower starts first."},
	{Section: SectionDefault, Key: "multiple_active", Type: TypeEnum, Default: "stop_others", Allowed: []string{"stop_others", "freeze", "warn"}, Field: "MultipleActive",
		Doc: "What the daemons do when the service is found up on more than one node (after a split with `quorum = false`, or a manual start), once the data of every node running it is fresh and the situation has lasted `ready_period`. `stop_others`: keep one instance and every other node stops its own; the one kept is, in order: one that cannot be stopped (frozen, or on a frozen node), one Haven started (local expect `started`, a fencing token) over a copy started behind its back, a complete one (avail `up`) over an incomplete one, the latest start (the greatest fencing token), the first in placement rank; once alone it starts what is down in it and announces its addresses again (docs/multiple-active.md); `freeze`: freeze the service on every node and stop nothing; `warn`: log only. Every node logs it at error level, naming the nodes, the kept one and the rule (event `multiple_active_resolve`)."},

	{Section: SectionResource, Key: "monitor", Type: TypeBool, Default: "false", Field: "Monitor",
		Doc: "A failure of this resource is handled by the daemon (restarts, then `monitor_action`); it is checked every `monitor_interval`."},
	{Section: SectionResource, Key: "restart", Type: TypeInt, Default: "0", Field: "Restart",
		Doc: "With `monitor = true`: how many times the daemon restarts this resource alone (a stop then a start of it; the other resources keep running) when it is found down where the instance runs, before the `monitor_action`. The count is kept on disk (a daemon restart does not give restarts back); a restart that brings the resource up keeps its count spent until the resource is up and its last failure is older than the stabilisation time, max(60s, 2 x `monitor_interval`) (Pacemaker's failure-timeout); a start of the instance or `svcmgr clear` resets it. `print status` shows `restart N remaining` and the last failure."},
	{Section: SectionResource, Key: "restart_delay", Type: TypeDuration, Default: "500ms", Field: "RestartDelay",
		Doc: "The pause between finding the resource down and the first restart of the ladder (the instance is `restarting` meanwhile); each later restart counted waits twice the one before, at most `restart_delay_max` (an exponential backoff: restart_delay x 2^(attempt-1))."},
	{Section: SectionResource, Key: "restart_delay_max", Type: TypeDuration, Default: "0", Field: "RestartDelayMax",
		Doc: "The cap of the ladder's exponential backoff: no restart waits longer than this. 0 (the default) means `restart_delay`: every restart waits `restart_delay`, no backoff. When set, at least `restart_delay`. The attempt number is the count of restarts the ladder still counts (see `restart_window`): restarts given back bring the delay down again."},
	{Section: SectionResource, Key: "restart_window", Type: TypeDuration, Default: "0", Field: "RestartWindow",
		Doc: "With `monitor = true`: a sliding window over which the ladder counts its restarts: a restart older than this no longer counts against `restart` (nor in the backoff of `restart_delay_max`), so a crash-looping resource that stays up, or fails less often than `restart` times per window, gets its restarts back one by one, while one that fails `restart` times within the window runs out of them (then the `monitor_action`). 0 (the default): no window, every restart since the last reset counts (the reset rules of `restart` apply in both cases). `print status` and `svcmgr explain` say the window next to the restarts remaining."},
	{Section: SectionResource, Key: "optional", Type: TypeBool, Default: "false", Field: "Optional",
		Doc: "A failure of this resource does not fail the action, and its status does not count in the instance status."},
	{Section: SectionResource, Key: "disable", Type: TypeBool, Default: "false", Field: "Disable",
		Doc: "The resource is ignored by every action and status."},
	{Section: SectionResource, Key: "timeout", Type: TypeDuration, Default: "30s", Field: "Timeout",
		Doc: "The time limit of each action (start, stop, check) of the resource (an `ip`'s default is 5s: its own keyword). With `cluster.quorum`, the sum of a service's stop limits is its stop budget, which the survivors of a split wait before they take a lost node's services over (docs/operations.md, \"Split brain\"): a limit far above the real stop delays every such takeover."},

	{Section: SectionApp, Key: "start", Type: TypeString, Field: "Start",
		Doc: "The start command. Split like shell words and run without a shell (write `sh -c '...'` for one), in the service's private directory, with HAVEN_SVCNAME, HAVEN_NODENAME, HAVEN_RID and HAVEN_ACTION set, and HAVEN_FENCING_TOKEN (the start's fencing token, see docs/fencing-token.md; also given to stop and check, with the token of the running instance). An app needs at least one of start, stop, check. A command ends when it exits with its output closed: a start that leaves a process running should detach it from its output (`sleep 100000 >/dev/null 2>&1 &`, as in the examples); a background process that keeps the output open delays the end of the start by up to about 0.7 s (its exit is then polled, and that output read 200 ms more)."},
	{Section: SectionApp, Key: "stop", Type: TypeString, Field: "Stop",
		Doc: "The stop command. It must be idempotent, as an OCF agent's stop is: Haven runs it on a resource that may be down already (a restart of the ladder, the stop after a failed start, a takeover's clean-up), and it must then exit 0; a non-zero exit is a failed stop (`stop failed`), which holds the service until `svcmgr clear`."},
	{Section: SectionApp, Key: "check", Type: TypeString, Field: "Check",
		Doc: "The status command: exit 0 up, 1 down, anything else warn. Without one, the status is `n/a`."},
	{Section: SectionApp, Key: "info", Type: TypeString, Field: "Info",
		Doc: "A command whose output is shown by `print status`."},

	{Section: SectionIP, Key: "ipname", Type: TypeString, Required: true, Field: "IPName",
		Doc: "The address to plumb: an IPv4 or IPv6 address (a value with a reference is checked once expanded)."},
	{Section: SectionIP, Key: "ipdev", Type: TypeString, Required: true, Field: "IPDev",
		Doc: "The network interface that carries the address."},
	{Section: SectionIP, Key: "netmask", Type: TypeString, Field: "Netmask",
		Doc: "Prefix length (`24`) or dotted IPv4 mask (`255.255.255.0`). Default: 32 for IPv4, 128 for IPv6."},
	{Section: SectionIP, Key: "timeout", Type: TypeDuration, Default: "5s", Field: "Timeout",
		Doc: "The time limit of each action of the address: its stop (an address removed: milliseconds) as a whole, its start apart from the probe (`probe_timeout`), its check. It counts in the service's stop budget (see the resources' `timeout`)."},
	{Section: SectionIP, Key: "probe_timeout", Type: TypeDuration, Default: "300ms", Field: "ProbeTimeout",
		Doc: "Before adding the address, the start asks the link whether another host holds it (IPv4: an ARP probe, IPv6 or a device without ARP: an ICMP echo), one probe every 100ms, and refuses to start at the first answer. This is how long it waits when nobody answers, so it is added to every failover of the address. A host holding the address answers within a few milliseconds on a LAN: 300ms leaves room for two lost probes. More than 0, at most 10s."},

	{Section: SectionFS, Key: "dev", Type: TypeString, Required: true, Field: "Dev",
		Doc: "What to mount: a block device (`/dev/sdb1`, `/dev/mapper/vg-lv`, `/dev/disk/by-uuid/...`: symlinks are resolved), a regular file (an image: mount(8) attaches it to a loop device, detached again at the unmount), or a source without a path such as `server:/export` or `tmpfs` (a directory, for a bind mount, is refused). `UUID=X` and `LABEL=X` are read as /dev/disk/by-uuid/X and /dev/disk/by-label/X. The status is `up` when this is the filesystem mounted on `mnt`. The start refuses when this block device (or image) is already mounted anywhere on the node, naming where."},
	{Section: SectionFS, Key: "mnt", Type: TypeString, Required: true, Field: "Mnt",
		Doc: "The mount point: an absolute path other than `/`, created (mode 0755, with its parents) by the start when missing. The start refuses when another device is mounted there."},
	{Section: SectionFS, Key: "type", Type: TypeString, Required: true, Field: "FSType",
		Doc: "The filesystem type, given to `mount -t` (`ext4`, `xfs`, `nfs`, ...); `auto` lets mount(8) probe the device."},
	{Section: SectionFS, Key: "mnt_opt", Type: TypeString, Field: "MntOpt",
		Doc: "Mount options, comma separated as in fstab (`noatime,nodev`), given to `mount -o`. Empty: none."},
	{Section: SectionFS, Key: "force_unmount", Type: TypeBool, Default: "false", Field: "ForceUnmount",
		Doc: "When the unmount fails because processes still use the filesystem (open files, current or root directory, mapped files, in the daemon's mount namespace), send them SIGTERM, then SIGKILL to those still there 5s later, and unmount again. The processes are found in /proc, as `fuser -km` would; each one is logged with its pid and command. Off: the stop fails and names them."},

	{Section: SectionOCF, Key: "agent", Type: TypeString, Required: true, NoExpand: true, Field: "Agent",
		Doc: "The OCF resource agent, `PROVIDER:TYPE` (`heartbeat:IPaddr2`, `heartbeat:Filesystem`, `heartbeat:apache`); `ocf:PROVIDER:TYPE`, as Pacemaker writes it, is accepted. It runs as `OCF_ROOT/resource.d/PROVIDER/TYPE` (node.toml `ocf_root`) with the OCF environment and the `params`. `svcmgr describe ocf:heartbeat:IPaddr2` prints its parameters and actions. The agents that run only as a promotable clone or only as a clone (Stateful, galera, ping, ...) are refused: a Haven service is a failover service; those that also run as a primitive (mysql, pgsql, redis) run as one. A node where the agent is not installed cannot run the resource: it says so in the status (`cannot run here`) and the service is placed on the nodes that have it. See docs/resources.md."},
	{Section: SectionOCF, Key: "params", Type: TypeMap, Field: "Params",
		Doc: "The instance parameters of the agent, as a table of strings (`params = { ip = \"10.0.0.50\", cidr_netmask = \"24\" }`), each passed as `OCF_RESKEY_NAME`. When the config is validated or created on a node where the agent is installed, an unknown parameter, or a required one missing, is refused with the agent's own description of its parameters."},
	{Section: SectionOCF, Key: "start_timeout", Type: TypeDuration, Default: "0s", Field: "StartTimeout",
		Doc: "The time limit of the agent's start. `0s` (unset): `timeout` when it is set in the section, else the start timeout the agent's meta-data advises, else 30s. The monitor that confirms a start, and the validate-all before it, count in it."},
	{Section: SectionOCF, Key: "stop_timeout", Type: TypeDuration, Default: "0s", Field: "StopTimeout",
		Doc: "The time limit of the agent's stop: like `start_timeout`, with the stop's advised timeout."},
	{Section: SectionOCF, Key: "monitor_timeout", Type: TypeDuration, Default: "0s", Field: "MonitorTimeout",
		Doc: "The time limit of the agent's monitor (the status check): like `start_timeout`, with the monitor's advised timeout."},

	{Section: SectionContainer, Key: "engine", Type: TypeEnum, Default: "podman", Allowed: []string{"podman", "docker"}, Field: "Engine",
		Doc: "The container engine, run through its command line (`podman` or `docker`, found in PATH). With `docker`, dockerd must use the `cgroupfs` cgroup driver for the container to run in the instance's cgroup (docs/resources.md, \"The docker engine\"), and `rootfs` is refused (docker runs images only). The engine's own environment given to the daemon (CONTAINERS_STORAGE_CONF, CONTAINERS_CONF, XDG_*, DOCKER_HOST) and node.toml `container_env` reach every engine call."},
	{Section: SectionContainer, Key: "image", Type: TypeString, Field: "Image",
		Doc: "The image reference (`localhost/web:1.2`, `registry.example.com/web:1.2`). Exactly one of `image` and `rootfs`. A node whose engine storage lacks the image cannot run the resource (with `pull = \"never\"`): its status says `cannot run here` and the service is placed on the nodes that have it. Load images ahead of time: `svcmgr -s SVC pull` pulls them on every candidate node (or `podman load`, `podman import`, `podman pull`, or docker's, on each)."},
	{Section: SectionContainer, Key: "rootfs", Type: TypeString, Field: "Rootfs",
		Doc: "A directory holding the container's root filesystem, run as is (`podman run --rootfs`), instead of an `image`; podman only (refused with `engine = \"docker\"`: docker runs images). An absolute path; a node where it is missing cannot run the resource (`cannot run here`)."},
	{Section: SectionContainer, Key: "command", Type: TypeList, Field: "Command",
		Doc: "The command and its arguments, as a list (`[\"httpd\", \"-f\", \"-p\", \"8080\"]`; a string is split on blanks). Empty: the image's own command."},
	{Section: SectionContainer, Key: "entrypoint", Type: TypeString, Field: "Entrypoint",
		Doc: "Overrides the image's entrypoint (`podman run --entrypoint`). Empty: the image's own."},
	{Section: SectionContainer, Key: "env", Type: TypeMap, Field: "ContainerEnv",
		Doc: "Environment variables of the container, a table of strings (`env = { PORT = \"8080\" }`). HAVEN_SVCNAME, HAVEN_NODENAME, HAVEN_RID and HAVEN_FENCING_TOKEN (the start's fencing token, docs/fencing-token.md) are set by Haven and cannot be set here."},
	{Section: SectionContainer, Key: "volumes", Type: TypeList, Field: "Volumes",
		Doc: "Bind mounts, each `HOST:CONTAINER` or `HOST:CONTAINER:OPTIONS` (`/srv/web/data:/data:rw`): HOST an absolute path (an fs resource's `mnt`, mounted before the container starts: fs resources start first), CONTAINER an absolute path. Named volumes are refused for now."},
	{Section: SectionContainer, Key: "user", Type: TypeString, Field: "User",
		Doc: "The user (and group) the container's command runs as (`1000`, `1000:1000`, `nobody`). Empty: the image's."},
	{Section: SectionContainer, Key: "read_only", Type: TypeBool, Default: "false", Field: "ReadOnly",
		Doc: "Mount the container's root filesystem read-only (`podman run --read-only`)."},
	{Section: SectionContainer, Key: "memory", Type: TypeString, Field: "Memory",
		Doc: "The memory limit of the container: a number of bytes with an optional unit b, k, m or g (`256m`). Empty: no limit."},
	{Section: SectionContainer, Key: "cpus", Type: TypeString, Field: "CPUs",
		Doc: "The CPU limit of the container, in CPUs (`0.5`, `2`). Empty: no limit."},
	{Section: SectionContainer, Key: "pull", Type: TypeEnum, Default: "never", Allowed: []string{"never", "missing", "always"}, Field: "Pull",
		Doc: "When the start fetches the image. `never` (the default): a failover never waits on a registry; a node without the image cannot run the resource (`cannot run here`) and the service goes to a node that has it; `svcmgr -s SVC pull` loads it on every candidate node ahead of time. `missing`: the start pulls the image when the node lacks it, within the start's `timeout` (the status then says down, not `cannot run here`, on a node without it). `always`: every start pulls the image (a moved tag is fetched again), within the start's `timeout`; a pull that fails fails the start, even when an older copy of the image is here."},
	{Section: SectionContainer, Key: "stop_timeout", Type: TypeDuration, Default: "10s", Field: "StopTimeout",
		Doc: "How long the stop waits after SIGTERM (the image's stop signal) before the engine sends SIGKILL (`podman stop -t`). Whole seconds, less than `timeout`."},
	{Section: SectionContainer, Key: "network", Type: TypeString, Default: "host", Field: "Network",
		Doc: "The container's network. `host` (the default) shares the host's network: the container listens on the host's ports, and an `ip` resource's address of the same service (started before the container) is the container's too, so its failover moves the address with the container. `bridge` puts the container on the engine's default bridge network (podman's `podman` network through netavark: a `podman0` bridge, a veth and an address of 10.88.0.0/16 per container, made and removed by the engine at the container's start and removal; docker's `bridge`: dockerd's `docker0`, 172.17.0.0/16), reached from outside through `ports`. Other modes are refused."},
	{Section: SectionContainer, Key: "env_file", Type: TypeString, Field: "EnvFile",
		Doc: "A file of the node of environment variables for the container, one `KEY=VALUE` a line (`podman run --env-file`; `#` starts a comment), read by the engine at each start: an absolute path. The `env` keyword's variables and Haven's own (HAVEN_*) win over the file's. A node without the file cannot run the resource (`cannot run here`), as a node without the image: keep it on every candidate node (or on an fs resource of the service, mounted before the container starts). Its values are never logged nor shown in the status."},
	{Section: SectionContainer, Key: "ports", Type: TypeList, Field: "Ports",
		Doc: "Published ports, with `network = \"bridge\"` only: each `[IP:]HOSTPORT:CONTAINERPORT[/tcp|/udp]` (`--publish`; tcp when no protocol is given), IP an IPv4 address of the node (a literal, or a reference such as `{ip#vip.ipname}`: the service's address) or none for every address of the node. The engine forwards the node's HOSTPORT on IP to the container's CONTAINERPORT (NAT rules of the node's network namespace, made at the start and removed with the container); the address must be on the node at the start (an `ip` resource of the service starts first). Refused: a port out of 1..65535, a range, a missing host port, an IPv6 address (the default bridge network has IPv4 only), a host port and protocol published twice by the service on addresses that may be the same. Two services publishing one host port on one node: the second start fails (the engine holds the port)."},
	{Section: SectionContainer, Key: "cap_add", Type: TypeList, Field: "CapAdd",
		Doc: "Linux capabilities added to the container's default set (`podman run --cap-add`), each a name such as `NET_BIND_SERVICE` or `CAP_NET_ADMIN` (the `CAP_` prefix may be left out), or `ALL`."},
	{Section: SectionContainer, Key: "cap_drop", Type: TypeList, Field: "CapDrop",
		Doc: "Linux capabilities dropped from the container's default set (`podman run --cap-drop`), as `cap_add`; `ALL` drops every one (then add back the few the command needs with `cap_add`)."},
	{Section: SectionContainer, Key: "healthcheck", Type: TypeString, Field: "Healthcheck",
		Doc: "A health command run inside the container (`--health-cmd`, a shell command line; its exit status 0 is healthy). With podman, each status check of the resource runs it (`podman healthcheck run`: the engine's own timer is disabled, as it needs systemd); with docker, dockerd runs it on its own timer every `monitor_interval` of the node (`--health-interval`, `--health-retries 3`) and each check reads its state from the listing of the node's containers. The engine counts the answers: `healthy` is up, `starting` (fewer than 3 failures in a row since the start) is up too, `unhealthy` (3 failures in a row, the engine's count) is down with the reason `unhealthy`, so `monitor` and `restart` act on it as on a container that ended. The start does not wait for the first healthy answer. Empty (the default): no health command; an image's own health check is not run."},
}

var kwIndex = func() map[string]*Keyword {
	m := map[string]*Keyword{}
	for i := range Keywords {
		kw := &Keywords[i]
		m[kw.Section+"\x00"+kw.Key] = kw
	}
	return m
}()

// Lookup returns the keyword key of a section kind; for a resource kind it also
// finds the common resource keywords. For [nodes] any key is a member.
func Lookup(kind, key string) (*Keyword, bool) {
	if kind == SectionNodes || kind == SectionNodeKeys || kind == SectionAdminKeys {
		key = AnyKey
	}
	if kw, ok := kwIndex[kind+"\x00"+key]; ok {
		return kw, true
	}
	if isResourceKind(kind) {
		kw, ok := kwIndex[SectionResource+"\x00"+key]
		return kw, ok
	}
	return nil, false
}

// SectionKeywords returns the keywords of a section kind in table order,
// followed for a resource kind by the common resource keywords it does
// not define itself (ip has its own timeout).
func SectionKeywords(kind string) []*Keyword {
	var out []*Keyword
	for i := range Keywords {
		if kw := &Keywords[i]; kw.Section == kind {
			out = append(out, kw)
		}
	}
	if isResourceKind(kind) {
		for _, kw := range SectionKeywords(SectionResource) {
			if _, own := kwIndex[kind+"\x00"+kw.Key]; !own { // a kind's own default first
				out = append(out, kw)
			}
		}
	}
	return out
}

// ResourceTypes are the resource section kinds, in start order.
var ResourceTypes = []string{SectionIP, SectionFS, SectionOCF, SectionContainer, SectionApp}

func isResourceKind(kind string) bool {
	return kind == SectionApp || kind == SectionIP || kind == SectionFS || kind == SectionOCF || kind == SectionContainer
}

func resourceTypeRank(kind string) int {
	for i, t := range ResourceTypes {
		if t == kind {
			return i
		}
	}
	return len(ResourceTypes)
}

// keywordNames lists the keywords of a kind, for "unknown keyword" hints.
func keywordNames(kind string) string {
	var names []string
	for _, kw := range SectionKeywords(kind) {
		names = append(names, kw.Key)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
