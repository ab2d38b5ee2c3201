package resource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/config"
)

// An app started by haven must not ping systemd as if it were the daemon:
// the daemon's NOTIFY_SOCKET, WATCHDOG_* and LISTEN_* stay with it. Other
// variables (PATH, ...) are inherited.
func TestAppCommandsDoNotInheritDaemonOnlyEnv(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", "1234")
	t.Setenv("LISTEN_FDS", "1")
	t.Setenv("HAVEN_TEST_KEPT", "yes")
	env, _ := testEnv(t)
	out := filepath.Join(t.TempDir(), "env.txt")
	start := script(t, "start", "env > "+out)
	d := newTestApp(t, config.ResourceConfig{Start: start, Timeout: 10 * time.Second}, env)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := "\n" + string(b)
	for _, v := range []string{"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID=", "LISTEN_FDS="} {
		if strings.Contains(got, "\n"+v) {
			t.Errorf("the start command inherited %s...", v)
		}
	}
	for _, v := range []string{"HAVEN_TEST_KEPT=yes", "PATH=", "HAVEN_SVCNAME=websvc"} {
		if !strings.Contains(got, "\n"+v) {
			t.Errorf("the start command lacks %s", v)
		}
	}
}
