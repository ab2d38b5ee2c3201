package config_test

import (
	"testing"

	"haven/config/tomlfile"
)

// The node actions' commands default to the sysrq triggers and are
// overridden by node.toml (tests give a harmless command).
func TestNodeActionCommands(t *testing.T) {
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.CrashCommand != "echo c > /proc/sysrq-trigger" || n.RebootCommand != "echo b > /proc/sysrq-trigger" {
		t.Fatalf("defaults: crash %q reboot %q", n.CrashCommand, n.RebootCommand)
	}
	n, err = tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\ncrash_command = \"touch /tmp/c\"\nreboot_command = \"touch /tmp/r\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.CrashCommand != "touch /tmp/c" || n.RebootCommand != "touch /tmp/r" {
		t.Fatalf("set: crash %q reboot %q", n.CrashCommand, n.RebootCommand)
	}
}

// The restart ladder's keywords are accepted (they were refused at load
// until the ladder acted on them).
func TestLadderKeywordsAccepted(t *testing.T) {
	s, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nmonitor_action = \"switch\"\n[app.web]\nstart = \"x\"\nmonitor = true\nrestart = 2\nrestart_delay = \"1s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.MonitorAction != "switch" || s.Resources[0].Restart != 2 || s.Resources[0].RestartDelay.String() != "1s" {
		t.Fatalf("got %q %+v", s.MonitorAction, s.Resources[0])
	}
}

// The backoff's cap and the window are read; unset, they are 0 (no
// backoff, no window).
func TestLadderBackoffKeywords(t *testing.T) {
	s, err := tomlfile.ParseService("web.toml", "web", []byte("[app.web]\nstart = \"x\"\nmonitor = true\nrestart = 2\nrestart_delay = \"1s\"\nrestart_delay_max = \"30s\"\nrestart_window = \"10m\"\n[app.db]\nstart = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Resources {
		want := map[string][2]string{"app#web": {"30s", "10m0s"}, "app#db": {"0s", "0s"}}[r.RID]
		if got := [2]string{r.RestartDelayMax.String(), r.RestartWindow.String()}; got != want {
			t.Fatalf("%s: delay max, window %v, want %v", r.RID, got, want)
		}
	}
}
