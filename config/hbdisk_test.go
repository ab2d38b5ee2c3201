package config_test

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
)

func TestHBDiskKeywords(t *testing.T) {
	c, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\nwatchdog_device = \"/dev/watchdog\"\n[hb]\ntimeout = \"3s\"\ninterval = \"1s\"\n[hb.disk]\npath = \"/dev/disk/by-id/sbd\"\nfence = true\ntimeout = \"2s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.HBDiskConfig{Path: "/dev/disk/by-id/sbd", Fence: true, Timeout: 2 * time.Second}
	if c.HB.Disk != want || c.WatchdogDevice != "/dev/watchdog" || c.HB.Timeout != 3*time.Second {
		t.Fatalf("got %+v watchdog %q hb %+v", c.HB.Disk, c.WatchdogDevice, c.HB)
	}
	c, err = tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.HB.Disk != (config.HBDiskConfig{Timeout: 10 * time.Second}) || c.WatchdogDevice != "" {
		t.Fatalf("defaults: %+v %q", c.HB.Disk, c.WatchdogDevice)
	}
	for _, tt := range []struct{ data, want string }{
		{"[hb.disk]\nfence = true\n", "node.toml:2: hb.disk.fence: fencing through the disk needs hb.disk.path"},
		{"[hb.disk]\npath = \"disk.img\"\n", "node.toml:2: hb.disk.path: \"disk.img\" is not an absolute path"},
		{"[hb]\ninterval = \"1s\"\n[hb.disk]\npath = \"/d\"\ntimeout = \"1s\"\n", "node.toml:5: hb.disk.timeout: 1s must be longer than the beat period 1s"},
		{"[hb.disk]\npath = \"/d\"\ntimeout = \"0s\"\n", "node.toml:3: hb.disk.timeout: must be more than 0"},
		{"[hb.disk]\npath = \"/d\"\nfencing = true\n", "node.toml:3: hb.disk.fencing: unknown keyword"},
		{"[hb]\ndisk = \"/d\"\n", "hb.disk: must be a section [hb.disk]"},
		{"[node]\nwatchdog_device = \"watchdog\"\n", "node.toml:2: node.watchdog_device: \"watchdog\" is not an absolute path"},
	} {
		_, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseNode(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}

func TestHBDiskFenceNeedsQuorum(t *testing.T) {
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\n[hb.disk]\npath = \"/d\"\nfence = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := tomlfile.ParseCluster("cluster.toml", []byte("[cluster]\nname = \"c\"\n"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	err = config.CheckMember(n, cl)
	if err == nil || !strings.Contains(err.Error(), "node.toml:5: hb.disk.fence: fencing through the disk needs cluster.quorum = true") {
		t.Fatalf("fence without quorum: %v", err)
	}
	cl.Quorum = true
	if err := config.CheckMember(n, cl); err != nil {
		t.Fatal(err)
	}
}
