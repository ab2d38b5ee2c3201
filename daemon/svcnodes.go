package daemon

import (
	"haven/config"
	"haven/config/tomlfile"
)

// The nodes of a service are cluster members (config.CheckServiceNodes):
// a create or set made here naming another node is refused (exit 2, the
// key and the members), and a config received from a peer naming one is
// refused as a peer config that does not parse is (kept the last good
// one, config_refused logged). A name the installed config already held
// is let through (a node removed from cluster.toml).

// checkServiceNodes checks cfg, to replace the config of its service
// installed here (if any), against the members.
func (d *Daemon) checkServiceNodes(cfg *config.ServiceConfig) error {
	var prev []string
	if inst := d.services[cfg.Name]; inst != nil && inst.cfg != nil {
		prev = inst.cfg.Nodes
	}
	return config.CheckServiceNodes(cfg, prev, d.cluster.NodeNames())
}

// memberCodec is the service codec of the node core: the configs it
// parses (from peers, edits applied again on a peer's version) name
// members only. Used on the loop only (it reads the installed configs).
type memberCodec struct {
	tomlfile.ServiceCodec
	d *Daemon
}

// ParseService parses the config of service name and checks its
// signature (daemon/signed.go) and its nodes.
func (c memberCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	cfg, err := c.ServiceCodec.ParseService(name, raw)
	if err != nil {
		return nil, err
	}
	if err := c.d.sigs().Check(cfg); err != nil {
		return nil, err
	}
	if err := c.d.checkServiceNodes(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkServiceRefs checks the services cfg names (hard affinities,
// parents) against the cluster's configs as this node holds them
// (config.CheckServiceRefs): a create or set made here that names no
// service, or closes a cycle of parents, is refused (exit 2); with force
// a name of no service is a warning. On the loop. A config received from
// a peer is not checked: its node took it.
func (d *Daemon) checkServiceRefs(cfg *config.ServiceConfig, force bool) ([]*config.Error, error) {
	others := map[string][]string{}
	var prev *config.ServiceConfig
	for name, inst := range d.services {
		switch {
		case name == cfg.Name:
			prev = inst.cfg
		case inst.cfg != nil:
			others[name] = inst.cfg.Parents
		default:
			others[name] = nil
		}
	}
	for name := range d.cfgs.invalid {
		if _, ok := others[name]; !ok && name != cfg.Name {
			others[name] = nil // its config does not parse here: it exists
		}
	}
	return config.CheckServiceRefs(cfg, prev, others, force)
}
