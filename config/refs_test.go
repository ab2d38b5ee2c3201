package config_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

func TestForNode(t *testing.T) {
	data := `[DEFAULT]
nodes = ["n1", "{nodename}"]
priority = 7
constraints = '$("{nodename}" == "n1")'

[app.web]
start = "/srv/{name}/start --rid {rid} --prio {DEFAULT.priority} --timeout {app.web.timeout} --on {nodename} --in {var}"
stop = "sh -c 'awk \"{print $1}\" ${HOME} {}'"
check = "{app#db.check} {svcname}"
info = "{DEFAULT.nodes}"
timeout = 90

[app.db]
check = "/bin/check {rid} {ip.vip.ipname}"

[ip.vip]
ipname = "{ip.vip.netmask}"
ipdev = "eth{DEFAULT.priority}"
netmask = "255.255.255.0"
`
	s, err := tomlfile.ParseService("svc.toml", "svc", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.ForNode("n2", "/var/svc")
	if err != nil {
		t.Fatal(err)
	}
	web, db, vip := f.Resources[2], f.Resources[1], f.Resources[0]
	checks := []struct{ what, got, want string }{
		{"web.start", web.Start, "/srv/svc/start --rid app#web --prio 7 --timeout 1m30s --on n2 --in /var/svc"},
		{"web.stop", web.Stop, `sh -c 'awk "{print $1}" ${HOME} {}'`},
		{"web.check", web.Check, "/bin/check app#db 255.255.255.0 svc"},
		{"web.info", web.Info, "n1 n2"},
		{"db.check", db.Check, "/bin/check app#db 255.255.255.0"},
		{"vip.ipname", vip.IPName, "255.255.255.0"},
		{"vip.ipdev", vip.IPDev, "eth7"},
		{"constraints", f.Constraints, `$("{nodename}" == "n1")`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(f.Nodes, []string{"n1", "n2"}) {
		t.Errorf("nodes = %v", f.Nodes)
	}
	// The original is untouched.
	if s.Resources[2].Start == web.Start || s.Nodes[1] != "{nodename}" {
		t.Errorf("ForNode changed its receiver")
	}
}

func TestForNodeBadIP(t *testing.T) {
	data := "[ip.vip]\nipname = \"{nodename}\"\nipdev = \"eth0\"\n"
	s, err := tomlfile.ParseService("svc.toml", "svc", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForNode("10.1.1.1", "/v"); err != nil {
		t.Errorf("ForNode(ip): %v", err)
	}
	_, err = s.ForNode("n1", "/v")
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `svc.toml:2: ip#vip.ipname: invalid IP address "n1" (expanded)`) {
		t.Errorf("ForNode(bad ip) = %v", err)
	}
}

func TestExpansionBounded(t *testing.T) {
	// Each level quadruples the value: 4^9 bytes is past the limit.
	var b strings.Builder
	for i := 0; i < 9; i++ {
		fmt.Fprintf(&b, "[app.a%d]\nstart = \"{app.a%d.start}{app.a%d.start}{app.a%d.start}{app.a%d.start}\"\n", i, i+1, i+1, i+1, i+1)
	}
	b.WriteString("[app.a9]\nstart = \"x\"\n")
	_, err := tomlfile.ParseService("f.toml", "f", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("ParseService = %v, want a length error", err)
	}
}
