package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"haven/internal/cmdline"
)

// EventKinds are the kinds of the daemon's events (package node: the Kind
// of each event type), which [hook.NAME] events may name. A test of package
// node checks that every event type's kind is listed here. The markers of
// an events stream (stream, lost) are no daemon events: hooks never see them.
var EventKinds = []string{
	"action_begin", "action_end", "compat", "config", "daemon_start", "daemon_stop",
	"failover", "impostor", "instance_frozen", "instance_monitor", "instance_status",
	"instance_thawed", "monitor_action", "multiple_active", "multiple_active_end", "multiple_active_resolve", "announce",
	"node_action", "node_action_end", "node_frozen", "node_monitor", "node_thawed",
	"peer_down", "peer_status", "peer_up", "resource_failed", "resource_status", "restarts_reset",
	"restarts_spent", "target", "target_adopted", "target_failed", "target_reached", "target_pending",
	"quorum_vote", "quorum_stall", "arbitrator", "takeover_gate", "fenced", "fence_failed",
	"config_outside", "config_deleted_by_peer", "config_refused", "config_conflict", "config_install_failed",
	"config_rebased", "config_unconfirmed", "version_refused", "target_refused",
	"peer_stale", "peer_fresh", "duplicate_member", "duplicate_member_gone", "resource_fault", "feature_level",
	"link_down", "link_up", "link_degraded", "link_repaired", "peer_run_held", "peer_run_trusted", "cluster_conf",
	"rollout_started", "rollout_turn", "rollout_progress", "rollout_batch", "rollout_paused", "rollout_done", "rollback_started",
	"flex_scaled", "flex_instances", "flex_placed", "flex_replaced",
}

// HookAll is the events entry of a hook run on every event.
const HookAll = "*"

// Matches reports whether the hook runs on events of kind.
func (h Hook) Matches(kind string) bool {
	for _, e := range h.Events {
		if e == HookAll || e == kind {
			return true
		}
	}
	return false
}

// hooks reads the [hook.NAME] sections of node.toml, sorted by name.
func (d *document) hooks() ([]Hook, error) {
	var out []Hook
	for _, sec := range d.sections {
		if sec.kind != SectionHook {
			continue
		}
		if err := d.checkRequired(sec); err != nil {
			return nil, err
		}
		h := Hook{Name: sec.name}
		fill(&h, sec)
		if len(h.Events) == 0 {
			return nil, d.errAt(sec, "events", "empty: name event kinds (e.g. [\"failover\"]) or [\"*\"] for every event")
		}
		for _, k := range h.Events {
			if k != HookAll && !slices.Contains(EventKinds, k) {
				return nil, d.errAt(sec, "events", "unknown event kind %q (known: %s, or \"*\" for every event)", k, strings.Join(EventKinds, ", "))
			}
		}
		argv, err := cmdline.Split(h.Command)
		if err != nil {
			return nil, d.errAt(sec, "command", "%v", err)
		}
		if len(argv) == 0 {
			return nil, d.errAt(sec, "command", "empty command")
		}
		if h.Timeout <= 0 {
			return nil, d.errAt(sec, "timeout", "must be more than 0")
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// checkMetricsAddr checks node.metrics_addr: "" (off) or host:port, the
// host an IP address, localhost or empty (every address).
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, ok := splitHostPort(addr)
	if !ok {
		return fmt.Errorf("invalid address %q: want host:port (e.g. \"127.0.0.1:9477\" or \":9477\")", addr)
	}
	if host != "" && host != "localhost" && !isIP(host) {
		return fmt.Errorf("invalid address %q: the host must be an IP address, localhost or empty (every address)", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("invalid address %q: port %q out of range 1..65535", addr, port)
	}
	return nil
}
