package config_test

import (
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// The run digest leaves out the keywords that only orchestrate (and
// comments: an admin signature), not what runs; a resource that refers to
// one of them keeps it in. Every keyword of the set is a DEFAULT keyword
// declared.
func TestRunDigest(t *testing.T) {
	const base = "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\ntopology = \"flex\"\norchestrate = \"ha\"\nflex_target = 1\n\n[app.main]\nstart = \"sh -c 'echo v1'\"\n"
	digest := func(text string) string {
		t.Helper()
		cfg, err := tomlfile.ParseService("w.toml", "w", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.RunDigest
	}
	d0 := digest(base)
	same := map[string]string{
		"scaled":      "[DEFAULT]\nnodes = [\"n2\", \"n1\"]\ntopology = \"flex\"\norchestrate = \"ha\"\nflex_target = 2\nflex_max = 2\npriority = 10\nupdate_failure_action = \"pause\"\n\n[app.main]\nstart = \"sh -c 'echo v1'\"\n",
		"a comment":   base + "# haven-signature: alice 3 AAAA\n",
		"other order": "[app.main]\nstart = \"sh -c 'echo v1'\"\n\n[DEFAULT]\nflex_target = 1\ntopology = \"flex\"\norchestrate = \"ha\"\nnodes = [\"n1\", \"n2\"]\n",
	}
	for name, text := range same {
		if d := digest(text); d != d0 {
			t.Errorf("%s: run digest %s, want %s (only orchestration or layout changed)", name, d, d0)
		}
	}
	differ := map[string]string{
		"the start":     "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\ntopology = \"flex\"\norchestrate = \"ha\"\nflex_target = 1\n\n[app.main]\nstart = \"sh -c 'echo v2'\"\n",
		"the topology":  "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\n\n[app.main]\nstart = \"sh -c 'echo v1'\"\n",
		"a reference":   "[DEFAULT]\nnodes = [\"n1\", \"n2\"]\ntopology = \"flex\"\norchestrate = \"ha\"\nflex_target = 2\n\n[app.main]\nstart = \"sh -c 'echo {DEFAULT.flex_target}'\"\n",
		"a new section": base + "\n[app.other]\nstart = \"true\"\n",
	}
	ref := digest("[DEFAULT]\nnodes = [\"n1\", \"n2\"]\ntopology = \"flex\"\norchestrate = \"ha\"\nflex_target = 1\n\n[app.main]\nstart = \"sh -c 'echo {DEFAULT.flex_target}'\"\n")
	for name, text := range differ {
		d := digest(text)
		if name == "a reference" {
			if d == ref {
				t.Errorf("a referenced flex_target changed: same run digest")
			}
			continue
		}
		if d == d0 {
			t.Errorf("%s changed: same run digest", name)
		}
	}
	for _, k := range config.OrchestrationKeywords {
		if _, ok := config.Lookup(config.SectionDefault, k); !ok {
			t.Errorf("OrchestrationKeywords: %q is not a DEFAULT keyword", k)
		}
	}
}
