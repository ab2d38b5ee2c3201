package config_test

import (
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
)

// The rollout keywords: defaults (update_failure_action rollback), and
// start-first where no replacement may run beside the old instance, or
// out of range, refused with the file,
// the line and the key.
func TestUpdateKeywords(t *testing.T) {
	cfg, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\nupdate_max_failure_ratio = \"0.5\"\nupdate_failure_action = \"continue\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UpdateParallelism != 1 || cfg.UpdateOrder != "stop-first" || cfg.UpdateMonitor != 5*time.Second ||
		cfg.UpdateMaxFailureRatio != 0.5 || cfg.UpdateFailureAction != "continue" || cfg.UpdateDelay != 0 {
		t.Fatalf("got %d %q %s %v %q %s", cfg.UpdateParallelism, cfg.UpdateOrder, cfg.UpdateMonitor, cfg.UpdateMaxFailureRatio, cfg.UpdateFailureAction, cfg.UpdateDelay)
	}
	const head = "[DEFAULT]\nnodes = [\"n1\"]\n"
	const flex = "[DEFAULT]\nnodes = [\"n1\", \"n2\", \"n3\", \"n4\"]\ntopology = \"flex\"\norchestrate = \"ha\"\n"
	def, err := tomlfile.ParseService("w.toml", "w", []byte(head))
	if err != nil || def.UpdateFailureAction != "rollback" {
		t.Fatalf("default update_failure_action: got %q (%v), want rollback", def.UpdateFailureAction, err)
	}
	tests := []struct{ name, data, want string }{
		{"start-first failover", head + "update_order = \"start-first\"\n", `w.toml:3: DEFAULT.update_order: "start-first" is for flex services only`},
		{"start-first target = max", flex + "flex_target = 2\nflex_max = 2\nupdate_order = \"start-first\"\n", `w.toml:7: DEFAULT.update_order: "start-first" needs flex_max above flex_target (got 2 and 2)`},
		{"start-first max default", flex + "flex_target = 2\nupdate_order = \"start-first\"\n", `w.toml:6: DEFAULT.update_order: "start-first" needs flex_max above flex_target (got 2 and 2)`},
		{"start-first global", flex + "flex_target = \"all\"\nupdate_order = \"start-first\"\n", `w.toml:6: DEFAULT.update_order: "start-first" is not for flex_target = "all"`},
		{"start-first parallelism", flex + "flex_target = 2\nflex_max = 3\nupdate_parallelism = 2\nupdate_order = \"start-first\"\n", `w.toml:8: DEFAULT.update_order: "start-first" with update_parallelism 2 needs flex_max - flex_target at least 2 (got 1)`},
		{"action word", head + "update_failure_action = \"undo\"\n", `w.toml:3: DEFAULT.update_failure_action`},
		{"parallelism 0", head + "update_parallelism = 0\n", "w.toml:3: DEFAULT.update_parallelism: must be at least 1 (got 0)"},
		{"ratio over 1", head + "update_max_failure_ratio = \"1.5\"\n", `w.toml:3: DEFAULT.update_max_failure_ratio: "1.5": want a number from 0 to 1`},
		{"ratio word", head + "update_max_failure_ratio = \"half\"\n", `w.toml:3: DEFAULT.update_max_failure_ratio: "half": want a number from 0 to 1`},
		{"monitor negative", head + "update_monitor = \"-1s\"\n", "w.toml:3: DEFAULT.update_monitor: duration -1s out of range"},
	}
	sf, err := tomlfile.ParseService("w.toml", "w", []byte(flex+"flex_target = 2\nflex_max = 3\nupdate_order = \"start-first\"\n"))
	if err != nil || sf.UpdateOrder != "start-first" {
		t.Fatalf("start-first, flex target 2 max 3: got %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tomlfile.ParseService("w.toml", "w", []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
