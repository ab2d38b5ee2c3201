package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The OCF mode (Config.OCF, `chaos -ocf`, `make chaos OCF=1`): the test
// services are made of OCF agents (docs/resources.md) instead of an app
// resource. Their app is the same (the same start, stop and check scripts,
// the same journal), behind the OCF API: an agent ocf:chaos:app in an OCF
// root of the work directory, where Debian's heartbeat agents are linked
// too; each service also runs the real ocf:heartbeat:Dummy (its state file
// in {var}), so that every failover runs a real agent.

// ocfAgentScript is the agent ocf:chaos:app: start.sh, stop.sh and
// check.sh of the work directory %[1]s, with the OCF exit codes (a check
// that fails is 7, not running).
const ocfAgentScript = `#!/bin/sh
# the chaos suite's test app as an OCF agent: ocf:chaos:app
svc=$OCF_RESKEY_svc node=$OCF_RESKEY_CRM_meta_on_node var=$OCF_RESKEY_var
case $1 in
meta-data)
	cat <<'XML'
<?xml version="1.0"?>
<resource-agent name="app" version="1.0">
<version>1.0</version>
<longdesc lang="en">The chaos suite's test app behind the OCF API.</longdesc>
<shortdesc lang="en">chaos test app</shortdesc>
<parameters>
<parameter name="svc" required="1"><shortdesc lang="en">service name</shortdesc><content type="string"/></parameter>
<parameter name="var" required="1"><shortdesc lang="en">the service's private directory</shortdesc><content type="string"/></parameter>
</parameters>
<actions>
<action name="start" timeout="10s"/>
<action name="stop" timeout="10s"/>
<action name="monitor" timeout="10s" interval="1s" depth="0"/>
<action name="validate-all" timeout="5s"/>
<action name="meta-data" timeout="5s"/>
</actions>
</resource-agent>
XML
	exit 0 ;;
validate-all) [ -n "$svc" ] && [ -n "$var" ] || exit 6; exit 0 ;;
start) %[1]s/start.sh "$svc" "$node" "$var" || exit 1 ;;
stop) %[1]s/stop.sh "$svc" "$node" "$var" || exit 1 ;;
monitor) %[1]s/check.sh "$svc" "$node" "$var" || exit 7 ;;
*) exit 3 ;;
esac
exit 0
`

// systemOCFRoot is where Debian installs the OCF agents.
const systemOCFRoot = "/usr/lib/ocf"

// OCFRoot is the nodes' ocf_root in the OCF mode.
func (c *Cluster) OCFRoot() string { return filepath.Join(c.Work, "ocf") }

// OCFUnavailable says why the OCF mode cannot run here ("" when it can).
func OCFUnavailable() string {
	if _, err := os.Stat(filepath.Join(systemOCFRoot, "resource.d", "heartbeat", "Dummy")); err != nil {
		return "the OCF mode runs ocf:heartbeat:Dummy: apt-get install resource-agents (" + err.Error() + ")"
	}
	return ""
}

// writeOCFRoot makes the OCF root: the agent ocf:chaos:app, and links to
// the system's heartbeat agents and their shell functions.
func (c *Cluster) writeOCFRoot() error {
	root := c.OCFRoot()
	if err := writeFile(filepath.Join(root, "resource.d", "chaos", "app"), fmt.Sprintf(ocfAgentScript, c.Work), 0o755); err != nil {
		return err
	}
	for _, l := range []string{filepath.Join("resource.d", "heartbeat"), "lib"} {
		if err := os.Symlink(filepath.Join(systemOCFRoot, l), filepath.Join(root, l)); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}

// dummyTimeout is Dummy's timeout in the OCF mode: with the app's, their
// sum is appTimeout, the quorum's stop budget the split tests' bounds
// count on (split.go).
const dummyTimeout = 2 * time.Second

// ocfServiceConfig is ServiceConfig in the OCF mode: Dummy, then the app
// as ocf:chaos:app with the restart ladder.
func (c *Cluster) ocfServiceConfig(s Service) string {
	q := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		q[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
nodes = [%s]
monitor_action = "switch"

[ocf.1-state]
agent = "heartbeat:Dummy"
params = { state = "{var}/dummy.state" }
timeout = %q

[ocf.2-main]
agent = "chaos:app"
params = { svc = "{name}", var = "{var}" }
timeout = %q
monitor = true
restart = %d
restart_delay = %q
`, strings.Join(q, ", "), dummyTimeout, appTimeout-dummyTimeout, ladderRestarts, ladderDelay)
}
