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
