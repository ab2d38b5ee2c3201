package ocf

import "fmt"

// A Haven service is a failover service: one instance, on one node. The
// agents written only for Pacemaker's promotable clones (one promoted
// instance and unpromoted copies on the other nodes) or for plain clones
// (one copy on every node) cannot run as one, and are refused with what
// to do instead. Agents that also run as a primitive (mysql, pgsql, redis,
// db2, SAPInstance: they list promote and demote for their replication
// mode) run, in their primitive mode: Haven never promotes them.
//
// The meta-data has no flag for either kind; these are the agents of
// Debian's resource-agents and pacemaker packages that are of that kind.
var (
	promotableOnly = map[string]bool{
		"ocf:heartbeat:Stateful":           true,
		"ocf:pacemaker:Stateful":           true,
		"ocf:heartbeat:galera":             true,
		"ocf:heartbeat:mariadb":            true,
		"ocf:heartbeat:conntrackd":         true,
		"ocf:heartbeat:mpathpersist":       true,
		"ocf:heartbeat:sg_persist":         true,
		"ocf:heartbeat:rabbitmq-server-ha": true,
		"ocf:heartbeat:SAPHana":            true,
		"ocf:heartbeat:pgsqlms":            true,
	}
	cloneOnly = map[string]bool{
		"ocf:pacemaker:ping":             true,
		"ocf:pacemaker:pingd":            true,
		"ocf:pacemaker:controld":         true,
		"ocf:pacemaker:ClusterMon":       true,
		"ocf:pacemaker:HealthCPU":        true,
		"ocf:pacemaker:HealthSMART":      true,
		"ocf:pacemaker:HealthIOWait":     true,
		"ocf:pacemaker:SysInfo":          true,
		"ocf:pacemaker:attribute":        true,
		"ocf:heartbeat:SysInfo":          true,
		"ocf:heartbeat:NodeUtilization":  true,
		"ocf:heartbeat:clvm":             true,
		"ocf:heartbeat:lvmlockd":         true,
		"ocf:heartbeat:CTDB":             true,
		"ocf:heartbeat:rabbitmq-cluster": true,
		"ocf:heartbeat:azure-events":     true,
		"ocf:heartbeat:azure-events-az":  true,
		"ocf:heartbeat:SAPHanaTopology":  true,
	}
)

// Refused says why agent cannot run in a Haven service, nil when it can.
// m may be nil (the meta-data is not known here).
func Refused(a Agent, m *Metadata) error {
	name := a.Name()
	switch {
	case promotableOnly[name]:
		return fmt.Errorf("agent %s runs only as a promotable clone (one promoted instance, unpromoted copies elsewhere): a Haven service is a failover service, one instance on one node; run the database's own replication between two services, or this agent under Pacemaker", name)
	case cloneOnly[name]:
		return fmt.Errorf("agent %s runs only as a clone (a copy on every node): a Haven service is a failover service, one instance on one node; run what it does on each node outside a service (a systemd unit), or under Pacemaker", name)
	}
	return nil
}
