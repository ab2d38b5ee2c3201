package config_test

import (
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
)

// TestOCFSection: an [ocf.NAME] section, its parameters (inline or as a
// table, with references expanded per node), the start order, and the
// errors of a bad agent name or parameter name.
func TestOCFSection(t *testing.T) {
	data := `[DEFAULT]
nodes = ["n1"]

[app.web]
check = "true"

[ocf.vip]
agent = "heartbeat:IPaddr2"
params = { ip = "10.0.0.50", cidr_netmask = "24", nic = "eth-{nodename}" }
monitor = true

[ocf.data]
agent = "ocf:heartbeat:Filesystem"
timeout = "10s"
stop_timeout = "2m"

[ocf.data.params]
device = "/dev/loop0"
directory = "/mnt"
fstype = "ext4"
`
	s, err := tomlfile.ParseService("web.toml", "web", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range s.Resources {
		order = append(order, r.RID)
	}
	if strings.Join(order, " ") != "ocf#data ocf#vip app#web" {
		t.Fatalf("start order %v", order)
	}
	e, err := s.ForNode("n1", "/var/lib/haven/services/web")
	if err != nil {
		t.Fatal(err)
	}
	data0, vip := e.Resources[0], e.Resources[1]
	if vip.Params["nic"] != "eth-n1" || vip.Params["ip"] != "10.0.0.50" || vip.TimeoutSet || !vip.Monitor {
		t.Fatalf("vip: %+v", vip)
	}
	if data0.Params["fstype"] != "ext4" || !data0.TimeoutSet || data0.Timeout != 10*time.Second || data0.StopTimeout != 2*time.Minute {
		t.Fatalf("data: %+v", data0)
	}
	if got := s.ErrorAt("ocf#data", "params.device", "x").Line; got != 18 {
		t.Errorf("ocf#data.params.device at line %d, want 18", got)
	}
	if got := s.ErrorAt("ocf#vip", "params.ip", "x").Line; got != 9 {
		t.Errorf("ocf#vip.params.ip at line %d, want 9", got)
	}

	bad := []struct{ body, want string }{
		{`agent = "IPaddr2"`, `web.toml:2: ocf#x.agent: agent "IPaddr2": want PROVIDER:TYPE`},
		{`agent = "lsb:heartbeat:apache"`, `only OCF agents run here`},
		{`agent = "heartbeat:../../bin/sh"`, `invalid name "../../bin/sh"`},
		{"agent = \"heartbeat:Dummy\"\nparams = { \"bad-name\" = \"1\" }", `web.toml:3: ocf#x.params: invalid parameter name "bad-name"`},
		{"agent = \"heartbeat:Dummy\"\nparams = { CRM_meta_timeout = \"1\" }", `set by Haven`},
		{"params = { a = \"1\" }", `agent: required`},
	}
	for _, b := range bad {
		_, err := tomlfile.ParseService("web.toml", "web", []byte("[ocf.x]\n"+b.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want %q", b.body, err, b.want)
		}
	}
}
