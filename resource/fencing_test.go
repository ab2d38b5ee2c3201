package resource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// The app's start, stop and check get the fencing token the context
// carries as HAVEN_FENCING_TOKEN; without one the variable is unset.
func TestAppGetsFencingToken(t *testing.T) {
	env, _ := testEnv(t)
	out := filepath.Join(t.TempDir(), "tokens")
	rec := func(what string) string {
		return script(t, what, `echo "$HAVEN_ACTION ${HAVEN_FENCING_TOKEN:-unset}" >> `+out)
	}
	d := newTestApp(t, config.ResourceConfig{Start: rec("start"), Stop: rec("stop"), Check: rec("check")}, env)
	ctx := WithFencingToken(context.Background(), 7)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("check: %s", st)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "start 7\ncheck 7\nstop 7\nstart unset"; got != want {
		t.Fatalf("the commands saw:\n%s\nwant:\n%s", got, want)
	}
}
