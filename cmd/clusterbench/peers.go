package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"haven/test/chaos"
	"haven/test/testbed"
)

// The systems of the side-by-side run, each on a bed of its own (three
// node namespaces and a client namespace on one bridge), all running at
// once: a kill and a link cut in one bed touch no other system.

// agent is one HA system on the three nodes of its bed.
type agent interface {
	// start starts the agent on every node and sets up the VIP.
	start() error
	// kill SIGKILLs the agent's processes on node (the VIP stays where it is).
	kill(node string) error
	// restart starts the agent again on node after a kill, and returns once
	// the node is back in the cluster.
	restart(node string) error
	// close stops everything (the bed is closed by the caller).
	close()
}

const (
	vipAddr   = chaos.Subnet + "100"
	clientIP  = chaos.Subnet + "200"
	vipPrefix = "24"
)

var sbsNodes = []string{"n1", "n2", "n3"}

// killNS SIGKILLs every process of node's namespace.
func killNS(bed *chaos.Bed, node string) {
	for _, pid := range bed.Pids(node) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// spawn starts cmd with its output in log, and reaps it when it ends.
func spawn(cmd *exec.Cmd, log string) error {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", strings.Join(cmd.Args, " "), err)
	}
	go func() { cmd.Wait(); f.Close() }()
	return nil
}

// ---------------------------------------------------------------------------
// keepalived: VRRP, advert_int 1, all BACKUP with nopreempt (the VIP stays
// where it is when a node comes back), priorities 150/100/50.

type keepalived struct {
	bed  *chaos.Bed
	work string
	// advert is advert_int (1s when 0). Under a second the instance runs
	// VRRPv3 (RFC 5798), whose interval is in centiseconds (0.01 s to
	// 40.95 s); VRRPv2 counts whole seconds and keepalived raises a
	// shorter one to 1 s
	advert time.Duration
}

func (k *keepalived) conf(node string, prio int) string {
	adv, version := "1", ""
	if k.advert > 0 {
		adv = strconv.FormatFloat(k.advert.Seconds(), 'f', -1, 64)
		if k.advert < time.Second || k.advert%time.Second != 0 {
			version = "\tversion 3\n"
		}
	}
	return fmt.Sprintf(`global_defs {
	router_id %s
}
vrrp_instance VI_1 {
	state BACKUP
	nopreempt
%s	interface %s
	virtual_router_id 51
	priority %d
	advert_int %s
	virtual_ipaddress {
		%s/%s dev %s
	}
}
`, node, version, chaos.Dev, prio, adv, vipAddr, vipPrefix, chaos.Dev)
}

func (k *keepalived) run(node string) error {
	d := filepath.Join(k.work, node)
	cmd := k.bed.Command(node, "keepalived", "--dont-fork", "--log-console", "--log-detail", "--no-syslog", "--vrrp",
		"--use-file", filepath.Join(d, "keepalived.conf"), "--pid", filepath.Join(d, "keepalived.pid"), "--vrrp_pid", filepath.Join(d, "vrrp.pid"))
	return spawn(cmd, filepath.Join(d, "keepalived.log"))
}

func (k *keepalived) start() error {
	for i, n := range sbsNodes {
		if err := testbed.WriteFile(filepath.Join(k.work, n, "keepalived.conf"), k.conf(n, 150-50*i), 0o644); err != nil {
			return err
		}
		if err := k.run(n); err != nil {
			return err
		}
	}
	return nil
}

func (k *keepalived) kill(node string) error { killNS(k.bed, node); return nil }

func (k *keepalived) restart(node string) error {
	os.Remove(filepath.Join(k.work, node, "keepalived.pid"))
	os.Remove(filepath.Join(k.work, node, "vrrp.pid"))
	if err := k.run(node); err != nil {
		return err
	}
	// the VRRP child runs and hears the master's adverts (one an advert_int)
	time.Sleep(3 * max(time.Second, k.advert))
	if len(k.bed.Pids(node)) < 2 {
		return fmt.Errorf("keepalived on %s did not start: see %s", node, filepath.Join(k.work, node, "keepalived.log"))
	}
	return nil
}

func (k *keepalived) close() {
	for _, n := range sbsNodes {
		killNS(k.bed, n)
	}
}

// ---------------------------------------------------------------------------
// Pacemaker on corosync (knet), token 3000 (consensus left at its default,
// 1.2 × token), stonith-enabled=false, resource-stickiness 100, the VIP an
// ocf:heartbeat:IPaddr2 primitive with a 10 s monitor. Each node runs
// corosync and pacemakerd in the foreground in a mount namespace of its
// own (unshare -m inside its network namespace) where /etc/corosync,
// /var/lib/corosync, /var/lib/pacemaker, /run and /dev/shm are its own:
// bind mounts of directories under the work directory, and tmpfs. The
// mounts live and die with the namespace's processes.

type pacemaker struct {
	bed  *chaos.Bed
	work string
	pid  map[string]int // pacemakerd, whose namespaces the CLI tools enter
}

const pcmkNodeScript = `#!/bin/sh
# corosync and pacemakerd of one node, in its own mount namespace
set -e
D=$1
mount --make-rprivate /
mount --bind "$D/etc-corosync" /etc/corosync
mount --bind "$D/var-lib-corosync" /var/lib/corosync
mount --bind "$D/var-lib-pacemaker" /var/lib/pacemaker
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/resource-agents /run/crm /run/pacemaker
chown hacluster:haclient /run/crm
export PCMK_logfile="$D/pacemaker.log"
corosync -f >>"$D/corosync.log" 2>&1 &
i=0
until corosync-cfgtool -s >/dev/null 2>&1; do
	i=$((i+1)); [ $i -gt 100 ] && { echo "corosync did not start"; exit 1; }
	sleep 0.1
done
exec pacemakerd
`

func (p *pacemaker) corosyncConf() string {
	var nl strings.Builder
	for i, n := range sbsNodes {
		fmt.Fprintf(&nl, "\tnode {\n\t\tring0_addr: %s\n\t\tname: %s\n\t\tnodeid: %d\n\t}\n", p.bed.Addr[n], n, i+1)
	}
	return fmt.Sprintf(`totem {
	version: 2
	cluster_name: havenbench
	transport: knet
	token: 3000
	crypto_cipher: none
	crypto_hash: none
}
nodelist {
%s}
quorum {
	provider: corosync_votequorum
}
logging {
	to_stderr: yes
	to_syslog: no
	to_logfile: no
	timestamp: hires
}
`, nl.String())
}

func (p *pacemaker) prepare(node string) error {
	d := filepath.Join(p.work, node)
	if err := testbed.WriteFile(filepath.Join(d, "etc-corosync", "corosync.conf"), p.corosyncConf(), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(d, "var-lib-corosync"), 0o755); err != nil {
		return err
	}
	// the package's empty tree, owned by hacluster
	if out, err := exec.Command("cp", "-a", "/var/lib/pacemaker", filepath.Join(d, "var-lib-pacemaker")).CombinedOutput(); err != nil {
		return fmt.Errorf("cp /var/lib/pacemaker: %w: %s", err, out)
	}
	if err := testbed.WriteFile(filepath.Join(d, "pacemaker.log"), "", 0o644); err != nil {
		return err
	}
	return exec.Command("chown", "hacluster:haclient", filepath.Join(d, "pacemaker.log")).Run()
}

func (p *pacemaker) run(node string) error {
	d := filepath.Join(p.work, node)
	cmd := p.bed.Command(node, "unshare", "-m", "sh", filepath.Join(p.work, "node.sh"), d)
	if err := spawn(cmd, filepath.Join(d, "node.log")); err != nil {
		return err
	}
	p.pid[node] = cmd.Process.Pid // unshare and sh exec: pacemakerd's pid
	return nil
}

// cli runs a Pacemaker tool in the namespaces of node's pacemakerd.
func (p *pacemaker) cli(node string, args ...string) (string, error) {
	pid := p.pid[node]
	out, err := exec.Command("nsenter", append([]string{"-t", fmt.Sprint(pid), "-m", "-n", "--"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s on %s: %w: %s", args[0], node, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// online waits until node's crm_mon shows every live node online and a DC.
func (p *pacemaker) online(node string, live []string, d time.Duration) error {
	want := "Online: [ " + strings.Join(live, " ") + " ]"
	var last string
	err := waitFor(d, "pacemaker: "+want+" on "+node, func() bool {
		out, err := p.cli(node, "crm_mon", "-1")
		last = out
		return err == nil && strings.Contains(out, want) && strings.Contains(out, "Current DC: n")
	})
	if err != nil {
		return fmt.Errorf("%w; crm_mon said: %s", err, last)
	}
	return nil
}

func (p *pacemaker) start() error {
	if err := testbed.WriteFile(filepath.Join(p.work, "node.sh"), pcmkNodeScript, 0o755); err != nil {
		return err
	}
	for _, n := range sbsNodes {
		if err := p.prepare(n); err != nil {
			return err
		}
		if err := p.run(n); err != nil {
			return err
		}
	}
	if err := p.online("n1", sbsNodes, 180*time.Second); err != nil {
		return err
	}
	prim := fmt.Sprintf(`<primitive id="vip" class="ocf" provider="heartbeat" type="IPaddr2"><instance_attributes id="vip-ia"><nvpair id="vip-ip" name="ip" value="%s"/><nvpair id="vip-cidr" name="cidr_netmask" value="%s"/><nvpair id="vip-nic" name="nic" value="%s"/></instance_attributes><operations><op id="vip-mon" name="monitor" interval="10s" timeout="20s"/></operations></primitive>`, vipAddr, vipPrefix, chaos.Dev)
	for _, args := range [][]string{
		{"crm_attribute", "--type", "crm_config", "--name", "stonith-enabled", "--update", "false"},
		{"crm_attribute", "--type", "rsc_defaults", "--name", "resource-stickiness", "--update", "100"},
		{"cibadmin", "--create", "-o", "resources", "--xml-text", prim},
	} {
		if _, err := p.cli("n1", args...); err != nil {
			return err
		}
	}
	return nil
}

func (p *pacemaker) kill(node string) error { killNS(p.bed, node); return nil }

func (p *pacemaker) restart(node string) error {
	if err := p.run(node); err != nil {
		return err
	}
	return p.online(node, sbsNodes, 120*time.Second)
}

func (p *pacemaker) close() {
	for _, n := range sbsNodes {
		killNS(p.bed, n)
	}
}

// ---------------------------------------------------------------------------
// Haven: three daemons (clusterbench's harness, in the bed's namespaces),
// one ha service holding the VIP in an ip resource.

type haven struct {
	c *cluster
}

func havenVIPService() string {
	return fmt.Sprintf("[DEFAULT]\norchestrate = \"ha\"\nnodes = %s\n\n[ip.vip]\nipname = %q\nipdev = %q\nnetmask = %q\n",
		testbed.NodeList(sbsNodes), vipAddr, chaos.Dev, vipPrefix)
}

func (h *haven) start() error {
	if err := h.c.startAll(); err != nil {
		return err
	}
	if err := h.c.waitPeersUp(120*time.Second, h.c.nodes); err != nil {
		return err
	}
	return h.c.nodes[0].createService("vip", havenVIPService())
}

// kill SIGKILLs the daemon, and returns at once: testbed.Crash waits for
// the pid to vanish, up to 5 s while the killed daemon is a zombie not yet
// reaped, and the link must be cut right after the kill (with hb.timeout
// 1s the survivors' address probe came before the cut, and n1 answered it).
func (h *haven) kill(node string) error {
	killNS(h.c.bed, node)
	return nil
}

func (h *haven) restart(node string) error {
	if err := h.c.by[node].start(); err != nil {
		return err
	}
	return h.c.waitPeersUp(120*time.Second, h.c.nodes)
}

func (h *haven) close() {} // the cluster is closed with its bed
