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

// ParseService parses the config of service name and checks its nodes.
func (c memberCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	cfg, err := c.ServiceCodec.ParseService(name, raw)
	if err != nil {
		return nil, err
	}
	if err := c.d.checkServiceNodes(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
