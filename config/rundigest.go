package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// OrchestrationKeywords are the [DEFAULT] keywords that only decide where,
// when and how many instances run, how they are ranked and watched from
// outside, and how a rollout goes: never what an instance runs. An edit
// of these alone changes the config's digest (it travels and is versioned
// as any edit) but not its run digest (ServiceConfig.RunDigest), so the
// instances running keep counting as running the current config: after
// `svcmgr scale` or a priority change, no "(old config)" and nothing to
// roll out (docs/behaviour.md 11). A resource that refers to one of them
// ({DEFAULT.KEY}) makes it part of what runs again.
var OrchestrationKeywords = []string{
	"nodes", "flex_target", "flex_min", "flex_max", "priority", "placement", "constraints",
	"orchestrate", "request_cpu", "request_mem",
	"hard_affinity", "hard_anti_affinity", "soft_affinity", "soft_anti_affinity", "parents", "children",
	"monitor_action", "multiple_active",
	"update_parallelism", "update_delay", "update_order", "update_monitor", "update_max_failure_ratio", "update_failure_action", "update_down_nodes",
}

// runDigest is the digest of what runs of a parsed service config: its
// sections and keywords as written, less the orchestration keywords not
// referred to, comments (an admin signature among them) and layout left
// out. Two configs that differ only by those have the same run digest.
func runDigest(d *document, raw []byte) string {
	out := make(map[string]map[string]any, len(d.sections))
	for _, sec := range d.sections {
		m := make(map[string]any, len(sec.keys))
		for _, k := range sec.keys {
			if sec.kind == SectionDefault && slices.Contains(OrchestrationKeywords, k) &&
				!strings.Contains(string(raw), "{"+SectionDefault+"."+k+"}") {
				continue
			}
			m[k] = sec.raw[k]
		}
		out[sec.id()] = m
	}
	b, err := json.Marshal(out) // the keys in order
	if err != nil {
		sum := sha256.Sum256(raw)
		return hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
