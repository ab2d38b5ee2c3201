package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"haven/test/testbed"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Timings of the chaos cluster: short, so that a test takes seconds.
const (
	hbTimeout   = 3 * time.Second
	hbInterval  = time.Second
	readyPeriod = time.Second
	maintGrace  = 6 * time.Second
	rejoinGrace = 20 * time.Second
	varSize     = "16m"
	// the restart ladder of every test service (docs/operations.md,
	// "Resource failures"): monitor_interval, restart, restart_delay
	monitorInterval = 300 * time.Millisecond
	ladderRestarts  = 2
	ladderDelay     = time.Second
	// appTimeout is the timeout of the services' app: the quorum's stop
	// budget, so part of the self-stop deadline
	appTimeout    = 10 * time.Second
	arbitratorIP  = Subnet + "254"
	arbitratorURI = "http://" + arbitratorIP + ":8080/"
	// oneVoteURI is Haven's one-vote arbitrator (Config.OneVote)
	oneVoteURI = "haven://" + arbitratorIP + ":10400"
	arbTimeout = 2 * time.Second
)

// Cluster is a set of nodes in the bed, their services, the journal.
type Cluster struct {
	cfg      Config
	Bed      *Bed
	Names    []string
	Nodes    map[string]*Node
	Work     string
	Journal  string
	Services []Service
	// Flex are the flex test services (one, flex1, on every node with
	// flex_target = flex_max = nodes - 1), unless Config.NoFlex or a
	// round with the previous release (which has no flex topology)
	Flex []Service
	// example are the services of an example made in the bed
	// (CreateExample), named in its guide
	example []ExampleService
	// stores are the nodes' podman stores (Config.Podman)
	stores  map[string]*testbed.Podman
	arb     *http.Server
	mounts  []string
	logSeen map[string]int64 // audits: how much of each log was read
	// quorum is the mode the daemons run now (cluster.quorum); members is
	// the [nodes] section and secret the cluster's, to write cluster.toml
	// again when the mode changes (SetQuorum)
	quorum  bool
	members string
	secret  string
	// actionsSeen: how many lines of NodeActions the audits read;
	// fenceSeen: how much of each log the audit of a disk-fence round
	// read for fences (diskmode.go)
	actionsSeen int
	fenceSeen   map[string]int64
	// closing makes CloseKeep run once (an abort and the round's end)
	closing sync.Once
	// reaper journals the end of an app killed behind the scripts' back
	// (reaper.go)
	reaper *reaper
}

// NodeActions is the file where the nodes' harmless crash_command and
// reboot_command record that they ran: `<uptime> <node> crash|reboot`.
func (c *Cluster) NodeActions() string { return filepath.Join(c.Work, "node-actions") }

// clusterToml is cluster.toml with quorum on or off. The arbitrator (the
// bed's HTTP server, a1) is named in both: it is read only with quorum on.
func (c *Cluster) clusterToml(quorum bool) string {
	uri := arbitratorURI
	if c.cfg.OneVote {
		uri = oneVoteURI
	}
	return fmt.Sprintf("[cluster]\nname = \"chaos\"\nsecret = %q\nquorum = %v\n\n[nodes]\n%s\n[arbitrator.a1]\nuri = %q\ntimeout = %q\n",
		c.secret, quorum, c.members, uri, arbTimeout)
}

// HBProfile is a cluster's heartbeat and ready timings (Config.HB).
type HBProfile struct {
	Timeout, Interval time.Duration // hb.timeout, hb.interval
	Ready             time.Duration // node.ready_period
	FastAck           bool          // node.ready_fast_ack
}

// orSuite is p, or the suite's own timings when p is nil.
func (p *HBProfile) orSuite() HBProfile {
	if p == nil {
		return HBProfile{Timeout: hbTimeout, Interval: hbInterval, Ready: readyPeriod}
	}
	return *p
}

// Service is one test service and the nodes it may run on. Flex is the
// flex_target (and flex_max) of a flex service, 0 for a failover service.
type Service struct {
	Name  string
	Nodes []string
	Flex  int
}

// all are the failover services, then the flex ones.
func (c *Cluster) all() []Service { return append(slices.Clone(c.Services), c.Flex...) }

// limits are the flex services' flex_max, for the journal's audit.
func (c *Cluster) limits() Limits {
	l := Limits{}
	for _, s := range c.Flex {
		l[s.Name] = s.Flex
	}
	return l
}

// App is the path of the service's process: a link to sleep whose name
// tells the audits which service a process belongs to.
func (c *Cluster) App(svc string) string { return filepath.Join(c.Work, "app-"+svc) }

// NewCluster makes the bed, the node roots (each R/var a small tmpfs of
// its own), the journal and the scripts, and an arbitrator host. It starts
// no daemon.
func NewCluster(cfg Config) (c *Cluster, err error) {
	return newCluster(cfg, cfg.Quorum == QuorumOn)
}

// newCluster is NewCluster with the daemons' first quorum mode.
func newCluster(cfg Config, quorum bool) (c *Cluster, err error) {
	if cfg.Nodes < 2 {
		cfg.Nodes = 3
	}
	work, err := os.MkdirTemp(cfg.Work, "haven-chaos-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{cfg: cfg, Work: work, Nodes: map[string]*Node{}, Journal: filepath.Join(work, "journal"), logSeen: map[string]int64{}, quorum: quorum}
	for i := 1; i <= cfg.Nodes; i++ {
		c.Names = append(c.Names, fmt.Sprintf("n%d", i))
	}
	bed, err := NewBedLinks(c.Names, cfg.Links)
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	c.Bed = bed
	defer func() {
		if err != nil {
			c.Close()
			c = nil
		}
	}()
	if err := bed.AddHost("arb", arbitratorIP); err != nil {
		return c, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	c.members, c.secret = membersToml(bed, c.Names), hex.EncodeToString(secret) // links.go
	if err := c.startArbitrator(); err != nil {
		return c, err
	}
	if err := c.writeScripts(); err != nil {
		return c, err
	}
	for _, n := range c.Names {
		nd := &Node{Name: n, Root: filepath.Join(work, n), c: c}
		c.Nodes[n] = nd
		if cfg.Previous != "" && n == c.Names[len(c.Names)-1] {
			nd.Bin = cfg.Previous // the node on the previous release (mixed.go)
		}
		// split_action stop (read with quorum on only), and node actions
		// that only record they ran: never the default sysrq
		action := filepath.Join(work, "node-action.sh")
		hb := cfg.HB.orSuite()
		nodeToml := fmt.Sprintf("[node]\nname = %q\nmonitor_interval = %q\nready_period = %q\nmaintenance_grace_period = %q\nrejoin_grace_period = %q\nsplit_action = \"stop\"\ncrash_command = \"%s %s crash\"\nreboot_command = \"%s %s reboot\"\n\n[hb]\naddr = %q\nport = %d\ntimeout = %q\ninterval = %q\n",
			n, monitorInterval, hb.Ready, maintGrace, rejoinGrace, action, n, action, n, bed.Addr[n], HBPort, hb.Timeout, hb.Interval)
		if hb.FastAck {
			nodeToml = strings.Replace(nodeToml, "\n\n[hb]", "\nready_fast_ack = true\n\n[hb]", 1)
		}
		if c.cfg.OCF {
			nodeToml = strings.Replace(nodeToml, "\n\n[hb]", fmt.Sprintf("\nocf_root = %q\n\n[hb]", c.OCFRoot()), 1)
		}
		nodeToml += c.diskToml()
		if c.cfg.Podman {
			kv, err := c.podmanStore(n)
			if err != nil {
				return c, err
			}
			nodeToml = strings.Replace(nodeToml, "[node]\n", "[node]\ncontainer_env = { "+kv+" }\n", 1)
		}
		if err := writeFile(filepath.Join(nd.Root, "etc", "node.toml"), nodeToml, 0o644); err != nil {
			return c, err
		}
		if err := writeFile(filepath.Join(nd.Root, "etc", "cluster.toml"), c.clusterToml(quorum), 0o600); err != nil {
			return c, err
		}
		if err := c.mountVar(nd); err != nil {
			return c, err
		}
	}
	if err := writeFile(c.Journal, "", 0o644); err != nil {
		return c, err
	}
	if err := c.startReaper(); err != nil {
		return c, err
	}
	return c, nil
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// mountVar puts a small tmpfs on the node's R/var, so that a fault can
// fill it or make it read-only for real.
func (c *Cluster) mountVar(n *Node) error {
	v := n.Var()
	if err := os.MkdirAll(v, 0o755); err != nil {
		return err
	}
	recordMade(madeEntry{Mount: v})
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+varSize, "tmpfs", v).CombinedOutput(); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w: %s", v, err, out)
	}
	c.mounts = append(c.mounts, v)
	return nil
}

// startArbitrator serves 200 on arbitratorURI from the arbitrator's own
// namespace: cutting its link (Bed.Cut("arb")) makes it unreachable.
func (c *Cluster) startArbitrator() error {
	if c.cfg.OneVote {
		return c.startOneVote()
	}
	var l net.Listener
	err := InNetns(c.Bed.NS["arb"], func() (err error) {
		l, err = net.Listen("tcp", arbitratorIP+":8080")
		return err
	})
	if err != nil {
		return fmt.Errorf("arbitrator: %w", err)
	}
	c.arb = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })}
	go c.arb.Serve(l)
	return nil
}

// startOneVote starts Haven's one-vote arbitrator (nodemgr arbitrator) in
// the arbitrator's namespace, its root below the work directory; Close
// ends it with every process of the namespaces.
func (c *Cluster) startOneVote() error {
	root := filepath.Join(c.Work, "arb")
	conf := fmt.Sprintf("[arbitrator]\nlisten = \"%s:10400\"\n\n[cluster.chaos]\nsecret = %q\n", arbitratorIP, c.secret)
	if err := writeFile(filepath.Join(root, "etc", "arbitrator.toml"), conf, 0o600); err != nil {
		return err
	}
	r, err := testbed.Command{Bin: filepath.Join(c.cfg.Bin, "nodemgr"), Root: root, Args: []string{"arbitrator", "start"}, NS: c.Bed.NS["arb"], Timeout: 20 * time.Second}.Run()
	if err != nil {
		return fmt.Errorf("one-vote arbitrator: %w", err)
	}
	if r.Code != 0 {
		return fmt.Errorf("one-vote arbitrator: %s", r)
	}
	return nil
}

// The test service's scripts. start journals, then starts the app (once);
// stop kills it, waits for its end, then journals. Before a script kills
// an app it leaves the file ending/PID in the work directory: the reaper
// (reaper.go) then leaves the journaling of that end to the script. The journal line is
// `<CLOCK_BOOTTIME seconds> <node> <service> start|stop`, appended (one
// write, O_APPEND) to one file on the host: the order of its lines is the
// order of the events, whatever the namespaces.
const scriptCommon = `#!/bin/sh
# the chaos suite's test app: %[1]s SVC NODE VAR
svc=$1 node=$2 var=$3
app=%[2]s/app-$svc
journal() { echo "$(cut -d' ' -f1 /proc/uptime) $node $svc $1" >> %[3]s; }
alive() { [ -n "$1" ] && grep -qs "app-$svc" /proc/$1/cmdline && ! grep -qs '^State:[[:space:]]*Z' /proc/$1/status; }
ending() { : > %[2]s/ending/$1; }
pid=$(cat "$var/main.pid" 2>/dev/null)
`

const startScript = `alive "$pid" && exit 0
if [ -e "%[2]s/fail-$svc-$node" ]; then echo "chaos: the start of $svc fails on $node"; exit 1; fi
case "$4" in bad*) if [ -e "%[2]s/badnode-$node" ]; then echo "chaos: version $4 of $svc fails on $node"; exit 1; fi;; esac
journal start
"$app" 100000 >/dev/null 2>&1 &
pid=$!
if ! echo $pid > "$var/main.pid"; then
	ending $pid; kill -9 $pid; journal stop; echo "cannot write $var/main.pid"; exit 1
fi
`

const stopScript = `if alive "$pid"; then
	ending "$pid"
	kill "$pid"
	i=0
	while alive "$pid"; do
		sleep 0.05; i=$((i+1)); [ $i -eq 100 ] && kill -9 "$pid"
	done
	journal stop
fi
rm -f "$var/main.pid"
`

const checkScript = `alive "$pid" || exit 1
`

// nodeActionScript is every node's crash_command and reboot_command: it
// records that it ran (NODE crash|reboot) and does nothing else.
const nodeActionScript = `#!/bin/sh
# the chaos suite's harmless node action: NODE crash|reboot
echo "$(cut -d' ' -f1 /proc/uptime) $1 $2" >> %s
`

func (c *Cluster) writeScripts() error {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.Work, "ending"), 0o755); err != nil {
		return err
	}
	for name, body := range map[string]string{"start.sh": startScript, "stop.sh": stopScript, "check.sh": checkScript} {
		s := fmt.Sprintf(scriptCommon+body, name, c.Work, c.Journal)
		if err := writeFile(filepath.Join(c.Work, name), s, 0o755); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(c.Work, "node-action.sh"), fmt.Sprintf(nodeActionScript, c.NodeActions()), 0o755); err != nil {
		return err
	}
	for _, s := range c.all() {
		if err := os.Symlink(sleep, c.App(s.Name)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	if c.cfg.OCF {
		return c.writeOCFRoot()
	}
	return nil
}

// ServiceConfig is the config of a test service. A flex service's app is
// the failover services' one, in OCF rounds too.
func (c *Cluster) ServiceConfig(s Service) string {
	q := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		q[i] = fmt.Sprintf("%q", n)
	}
	if c.cfg.OCF && s.Flex == 0 {
		return c.ocfServiceConfig(s)
	}
	topology := ""
	if s.Flex > 0 {
		topology = fmt.Sprintf("topology = \"flex\"\nflex_target = %d\n", s.Flex)
	}
	args := " {name} {nodename} {var}"
	// the restart ladder: a killed app is restarted in place, and once
	// its restarts are spent the service switches (ResourceRecover; a
	// flex instance moves to another node)
	return fmt.Sprintf("[DEFAULT]\norchestrate = \"ha\"\n%snodes = [%s]\nmonitor_action = \"switch\"\n\n[app.main]\nstart = %q\nstop = %q\ncheck = %q\ntimeout = %q\nmonitor = true\nrestart = %d\nrestart_delay = %q\n",
		topology, strings.Join(q, ", "), filepath.Join(c.Work, "start.sh")+args, filepath.Join(c.Work, "stop.sh")+args, filepath.Join(c.Work, "check.sh")+args,
		appTimeout, ladderRestarts, ladderDelay)
}

// CreateServices installs one failover service per rotation of the nodes
// (svc1 prefers n1, svc2 prefers n2...), at most count of them, and the flex
// service, from node n1.
func (c *Cluster) CreateServices(count int) error {
	for i := 0; i < count && i < len(c.Names); i++ {
		nodes := append(slices.Clone(c.Names[i:]), c.Names[:i]...)
		c.Services = append(c.Services, Service{Name: fmt.Sprintf("svc%d", i+1), Nodes: nodes})
	}
	if !c.cfg.NoFlex && c.cfg.Previous == "" {
		c.Flex = append(c.Flex, Service{Name: "flex1", Nodes: slices.Clone(c.Names), Flex: max(1, len(c.Names)-1)})
	}
	if err := c.writeScripts(); err != nil {
		return err
	}
	var lim strings.Builder
	for s, n := range c.limits() {
		fmt.Fprintf(&lim, "%s %d\n", s, n)
	}
	if err := writeFile(LimitsPath(c.Journal), lim.String(), 0o644); err != nil {
		return err
	}
	n := c.Nodes[c.Names[0]]
	for _, s := range c.all() {
		cfg := filepath.Join(c.Work, s.Name+".toml")
		if err := writeFile(cfg, c.ServiceConfig(s), 0o644); err != nil {
			return err
		}
		if err := n.must(30*time.Second, "svcmgr", "-s", s.Name, "create", "--config", cfg); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the daemons (asking, then killing what is left in the
// namespaces), unmounts the tmpfs and removes the work directory unless
// keep is set.
func (c *Cluster) Close() {
	c.CloseKeep(false)
}

func (c *Cluster) CloseKeep(keep bool) {
	c.closing.Do(func() { c.closeKeep(keep) })
}

func (c *Cluster) closeKeep(keep bool) {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		if n.DaemonAlive() {
			n.Signal(syscall.SIGCONT) // a paused daemon must run to stop
		}
	}
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Run(10*time.Second, "nodemgr", "daemon", "stop", "--time", "8s")
		}()
	}
	wg.Wait()
	if c.reaper != nil {
		c.reaper.close()
	}
	if c.arb != nil {
		c.arb.Close()
	}
	for _, p := range c.stores {
		p.Close() // the daemons stopped: nothing starts them again
	}
	if c.Bed != nil {
		c.Bed.Close()
	}
	for _, n := range c.Nodes {
		testbed.RemoveCgroups(n.Root) // the guards' and the services' groups
	}
	for _, m := range c.mounts {
		if out, err := exec.Command("umount", m).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "umount %s: %v: %s (lazy unmount)\n", m, err, out)
			exec.Command("umount", "-l", m).Run()
		}
	}
	if !keep {
		os.RemoveAll(c.Work)
	}
}

// podmanStore makes node n's podman store (below the work directory),
// imports the image localhost/hbox:1 there, and returns the store's
// environment as the inside of a TOML inline table.
func (c *Cluster) podmanStore(n string) (string, error) {
	p, err := testbed.NewPodman(filepath.Join(c.Work, "podman-"+n))
	if err != nil {
		return "", err
	}
	if c.stores == nil {
		c.stores = map[string]*testbed.Podman{}
	}
	c.stores[n] = p
	if err := p.ImportBusybox(ExampleImage); err != nil {
		return "", err
	}
	var kv []string
	for _, e := range p.Env {
		k, v, _ := strings.Cut(e, "=")
		kv = append(kv, fmt.Sprintf("%s = %q", k, v))
	}
	return strings.Join(kv, ", "), nil
}
