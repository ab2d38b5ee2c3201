package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"haven/config"
	"haven/resource/ocf"
)

// An OCF agent that no node of a service has is a name that cannot run
// anywhere (a typo: heartbeat:IPaddr3): create refuses it, and so does a
// set that names it, naming the file, the line and the key, once every
// node of the service said it lacks the agent (--force: installed with a
// warning, for an agent to be installed later). This node looks in its own OCF root; each other node of
// the service is asked through the heartbeat's transport (op ocfagents)
// and looks in its own. A node that cannot be asked (down, stopped, an
// older release, no answer) proves nothing: the config is then taken, and
// the nodes without the agent say `cannot run here` in the status.
const (
	opOCFAgents = "ocfagents"
	// maxAskedAgents bounds the agents of one ask.
	maxAskedAgents = 256
)

type ocfAgentsAsk struct {
	Agents []string `json:"agents"` // PROVIDER:TYPE
}

type ocfAgentsAnswer struct {
	Missing []string `json:"missing"` // the asked agents not installed here
}

// missingAgents are the agents (PROVIDER:TYPE) not installed under this
// node's OCF root.
func (d *Daemon) missingAgents(agents []string) []string {
	var out []string
	for _, name := range agents {
		// (ParseAgent takes names that start with a letter or a digit:
		// none looks outside resource.d)
		prov, typ, err := config.ParseAgent(name)
		if err != nil || (ocf.Agent{Root: d.ocfRoot(), Provider: prov, Type: typ}).Installed() != nil {
			out = append(out, name)
		}
	}
	return out
}

func (d *Daemon) ocfRoot() string {
	if d.node.OCFRoot != "" {
		return d.node.OCFRoot
	}
	return ocf.DefaultRoot
}

// answerOCFAgents answers a peer's ocfagents ask (off the loop: it looks
// at files).
func (d *Daemon) answerOCFAgents(body []byte, answer func(any, string)) {
	var q ocfAgentsAsk
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		answer(nil, "malformed request: "+err.Error())
		return
	}
	if len(q.Agents) > maxAskedAgents {
		answer(nil, fmt.Sprintf("%d agents asked: at most %d", len(q.Agents), maxAskedAgents))
		return
	}
	go func() { answer(ocfAgentsAnswer{Missing: d.missingAgents(q.Agents)}, "") }()
}

// agentsNowhere returns the ocf resources of cfg whose agent is installed
// on none of the service's nodes, when every one of them says so (run off
// the loop: the asks wait for the peers' answers), each as an error naming
// the file, the line and the key; with force, as a warning that says the
// config is installed anyway. An agent that held says true of is not
// asked (nil: every one is): a set asks about the agents it adds.
func (d *Daemon) agentsNowhere(cfg *config.ServiceConfig, held func(agent string) bool, force bool) []*config.Error {
	var agents []string
	rid := map[string]string{} // agent -> its first resource
	for a, r := range ocfAgentsOf(cfg) {
		if held == nil || !held(a) {
			rid[a] = r
			agents = append(agents, a)
		}
	}
	slices.Sort(agents)
	nodes := cfg.NodeList(d.cluster.NodeNames())
	if len(agents) == 0 || len(nodes) == 0 {
		return nil
	}
	// missing counts, per agent, the nodes of the service without it
	missing := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	known := true
	for _, n := range nodes {
		if n == d.node.Name {
			for _, a := range d.missingAgents(agents) {
				missing[a]++
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := d.askPeer(n, opOCFAgents, ocfAgentsAsk{Agents: agents})
			var ans ocfAgentsAnswer
			if err == nil {
				err = json.Unmarshal(raw, &ans)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				known = false // not asked, or no answer: no proof
				return
			}
			for _, a := range ans.Missing {
				if slices.Contains(agents, a) {
					missing[a]++
				}
			}
		}()
	}
	wg.Wait()
	if !known {
		return nil
	}
	var out []*config.Error
	for _, a := range agents {
		if missing[a] != len(nodes) {
			continue
		}
		msg := fmt.Sprintf("agent ocf:%s is installed on none of the service's nodes (%s): ", a, strings.Join(nodes, ", "))
		if force {
			msg += "installed anyway (--force): no node can run it until the agent is installed"
		} else {
			msg += "no node could run it; install it (Debian: resource-agents), fix the name (svcmgr describe --list), or install the config anyway with --force"
		}
		out = append(out, cfg.ErrorAt(rid[a], "agent", msg))
	}
	return out
}

// ocfAgentsOf maps the agents (PROVIDER:TYPE) of the enabled ocf
// resources of cfg to the first resource that names each.
func ocfAgentsOf(cfg *config.ServiceConfig) map[string]string {
	out := map[string]string{}
	for _, r := range cfg.Resources {
		if r.Type != config.SectionOCF || r.Disable {
			continue
		}
		prov, typ, err := config.ParseAgent(r.Agent)
		if err != nil {
			continue // CheckOCF said so
		}
		if _, seen := out[prov+":"+typ]; !seen {
			out[prov+":"+typ] = r.RID
		}
	}
	return out
}
