// Package ocf holds what Haven knows of the OCF resource agents (the Open
// Cluster Framework's agent API, which Pacemaker runs): the agents' place
// under the OCF root, their environment, their exit codes, and their XML
// meta-data (the parameters and the advised timeouts), read with
// encoding/xml. The ocf resource driver (package resource) runs them; the
// CLI and the daemon check a service's parameters against the meta-data
// where the agent is installed (CheckParams, through resource.CheckOCF),
// and `svcmgr describe` prints it (Describe).
//
// Nothing here runs a command: package resource runs the agents (their
// meta-data action too, ReadOCFMetadata).
package ocf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultRoot is the OCF root when node.toml sets no ocf_root.
const DefaultRoot = "/usr/lib/ocf"

// The OCF API version Haven speaks (OCF_RA_VERSION_MAJOR/MINOR).
const (
	VersionMajor = "1"
	VersionMinor = "1"
)

// DefaultRscTmp is HA_RSCTMP: the agents' state files (Dummy's, the
// pid files of anything, ...), a tmpfs cleared at boot as the agents
// expect (a state file that outlived a reboot would say running).
const DefaultRscTmp = "/run/resource-agents"

// Agent is an agent's name and where it is.
type Agent struct {
	Root     string // the OCF root
	Provider string // heartbeat
	Type     string // IPaddr2
}

// Name is the agent as Pacemaker writes it: "ocf:heartbeat:IPaddr2".
func (a Agent) Name() string { return "ocf:" + a.Provider + ":" + a.Type }

// Path is the agent's executable: ROOT/resource.d/PROVIDER/TYPE.
func (a Agent) Path() string {
	return filepath.Join(a.Root, "resource.d", a.Provider, a.Type)
}

// FunctionsDir is OCF_FUNCTIONS_DIR: the shell functions the agents
// source (ocf-shellfuncs).
func (a Agent) FunctionsDir() string { return filepath.Join(a.Root, "lib", "heartbeat") }

// Installed says why the agent cannot run on this node, nil when its
// executable is there.
func (a Agent) Installed() error {
	st, err := os.Stat(a.Path())
	switch {
	case err != nil:
		return fmt.Errorf("agent %s is not installed on this node (%s: %v)", a.Name(), a.Path(), errText(err))
	case !st.Mode().IsRegular():
		return fmt.Errorf("agent %s: %s is not a file", a.Name(), a.Path())
	case st.Mode()&0o111 == 0:
		return fmt.Errorf("agent %s: %s is not executable", a.Name(), a.Path())
	}
	return nil
}

func errText(err error) string {
	if os.IsNotExist(err) {
		return "no such file"
	}
	return err.Error()
}

// Action names of the OCF API.
const (
	ActionStart    = "start"
	ActionStop     = "stop"
	ActionMonitor  = "monitor"
	ActionValidate = "validate-all"
	ActionMetadata = "meta-data"
)

// Env is the OCF environment of one run of an agent's action, added to
// base (the daemon's PATH and the like): OCF_ROOT, OCF_FUNCTIONS_DIR,
// OCF_RA_VERSION_MAJOR/MINOR, OCF_RESOURCE_INSTANCE (the resource's
// instance name), OCF_RESOURCE_TYPE, OCF_RESOURCE_PROVIDER, HA_RSCTMP,
// OCF_RESKEY_<param> for each parameter, OCF_RESKEY_CRM_meta_timeout (the
// action's timeout in milliseconds), OCF_RESKEY_CRM_meta_interval (the
// monitor interval in milliseconds; 0 makes a monitor a probe, as
// Pacemaker's first look at a resource is), OCF_RESKEY_CRM_meta_on_node,
// OCF_TRACE_RA=0, OCF_CHECK_LEVEL=0, HA_LOGFACILITY=none and HA_LOGTAG
// (the agents' log lines go to standard error, which Haven logs),
// HA_debug=0.
type Env struct {
	Agent    Agent
	Instance string // OCF_RESOURCE_INSTANCE
	Node     string
	Params   map[string]string
	Timeout  time.Duration
	Interval time.Duration
	RscTmp   string // "" for DefaultRscTmp
}

// RscTmpDir is HA_RSCTMP.
func (e Env) RscTmpDir() string {
	if e.RscTmp == "" {
		return DefaultRscTmp
	}
	return e.RscTmp
}

// Environ returns the environment: base, without any OCF_ or HA_
// variable of its own, then the OCF ones.
func (e Env) Environ(base []string) []string {
	out := make([]string, 0, len(base)+20+len(e.Params))
	for _, kv := range base {
		if strings.HasPrefix(kv, "OCF_") || strings.HasPrefix(kv, "HA_") || strings.HasPrefix(kv, "__OCF_") {
			continue
		}
		out = append(out, kv)
	}
	rsctmp := e.RscTmpDir()
	out = append(out,
		"OCF_ROOT="+e.Agent.Root,
		"OCF_FUNCTIONS_DIR="+e.Agent.FunctionsDir(),
		"OCF_RA_VERSION_MAJOR="+VersionMajor,
		"OCF_RA_VERSION_MINOR="+VersionMinor,
		"OCF_RESOURCE_INSTANCE="+e.Instance,
		"OCF_RESOURCE_TYPE="+e.Agent.Type,
		"OCF_RESOURCE_PROVIDER="+e.Agent.Provider,
		"OCF_TRACE_RA=0",
		"OCF_CHECK_LEVEL=0",
		"HA_RSCTMP="+rsctmp,
		"HA_LOGFACILITY=none",
		"HA_LOGTAG=haven-"+e.Instance,
		"HA_debug=0",
		"OCF_RESKEY_CRM_meta_timeout="+strconv.FormatInt(e.Timeout.Milliseconds(), 10),
		"OCF_RESKEY_CRM_meta_interval="+strconv.FormatInt(e.Interval.Milliseconds(), 10),
	)
	if e.Node != "" {
		out = append(out, "OCF_RESKEY_CRM_meta_on_node="+e.Node)
	}
	keys := make([]string, 0, len(e.Params))
	for k := range e.Params {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		out = append(out, "OCF_RESKEY_"+k+"="+e.Params[k])
	}
	return out
}

// List returns the agents installed under root (of provider, when not
// ""), sorted by provider and type.
func List(root, provider string) ([]Agent, error) {
	provs, err := os.ReadDir(filepath.Join(root, "resource.d"))
	if err != nil {
		return nil, err
	}
	var out []Agent
	for _, p := range provs {
		if provider != "" && p.Name() != provider {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, "resource.d", p.Name()))
		if err != nil {
			continue
		}
		for _, e := range ents {
			a := Agent{Root: root, Provider: p.Name(), Type: e.Name()}
			if !strings.HasPrefix(e.Name(), ".") && a.Installed() == nil {
				out = append(out, a)
			}
		}
	}
	return out, nil
}
