package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	. "haven/config"
	"haven/config/tomlfile"
)

const goodService = `[DEFAULT]
nodes = ["n1", "n2", "n3"]
orchestrate = "ha"
placement = "nodes order"
constraints = 'node.labels.env in ["DEV", "TST"]'
hard_affinity = ["svc1"]
hard_anti_affinity = []
soft_affinity = []
soft_anti_affinity = []
parents = ["db", "db@n1"]
children = []
monitor_action = "none"
priority = 100

[app.web]
start = "/srv/web/bin/start"
stop = "/srv/web/bin/stop"
check = "/srv/web/bin/check"
info = ""
timeout = "30s"
monitor = true
restart = 0          # the ladder is not built yet: only the defaults are accepted
restart_delay = "500ms"
optional = false
disable = false

[ip.vip]
ipname = "192.168.10.50"
ipdev = "eth0"
netmask = "24"
`

func TestParseServiceGood(t *testing.T) {
	s, err := tomlfile.ParseService("web.toml", "web", []byte(goodService))
	if err != nil {
		t.Fatal(err)
	}
	if s.Constraint == nil || s.Orchestrate != "ha" || len(s.Resources) != 2 ||
		s.Resources[0].RID != "ip#vip" || s.Resources[1].RID != "app#web" || string(s.Raw) != goodService {
		t.Errorf("ParseService = %+v", s)
	}
}

func TestResourceOrder(t *testing.T) {
	data := "[app.b]\nstart='x'\n[app.a]\nstart='x'\n[ip.z]\nipname='::1'\nipdev='lo'\n[ip.y]\nipname='10.0.0.1'\nipdev='lo'\n"
	s, err := tomlfile.ParseService("s.toml", "s", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var rids []string
	for _, r := range s.Resources {
		rids = append(rids, r.RID)
	}
	if got := strings.Join(rids, " "); got != "ip#y ip#z app#a app#b" {
		t.Errorf("order = %s", got)
	}
}

// The fs sections sit between ip and app in the start order (the stop
// order is the reverse), and their keywords land in the config.
func TestResourceOrderFS(t *testing.T) {
	data := "[app.web]\nstart='x'\n[fs.b]\ndev='/dev/sdc'\nmnt='/srv/b'\ntype='xfs'\n" +
		"[fs.a]\ndev='UUID=1234'\nmnt='/srv/a'\ntype='ext4'\nmnt_opt='noatime,nodev'\nforce_unmount=true\nmonitor=true\ntimeout='5s'\n" +
		"[ip.vip]\nipname='10.0.0.1'\nipdev='lo'\n"
	s, err := tomlfile.ParseService("s.toml", "s", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var rids []string
	for _, r := range s.Resources {
		rids = append(rids, r.RID)
	}
	if got := strings.Join(rids, " "); got != "ip#vip fs#a fs#b app#web" {
		t.Errorf("order = %s, want ip#vip fs#a fs#b app#web", got)
	}
	a := s.Resources[1]
	if a.Type != "fs" || a.Dev != "UUID=1234" || a.Mnt != "/srv/a" || a.FSType != "ext4" || a.MntOpt != "noatime,nodev" ||
		!a.ForceUnmount || !a.Monitor || a.Timeout != 5*time.Second {
		t.Errorf("fs#a = %+v", a)
	}
	if b := s.Resources[2]; b.ForceUnmount || b.MntOpt != "" || b.Timeout != 30*time.Second {
		t.Errorf("fs#b defaults = %+v", b)
	}
}

// A mount point given by a reference is checked once expanded for the node.
func TestFSMntCheckedOnceExpanded(t *testing.T) {
	data := "[DEFAULT]\nnodes = [\"n1\"]\n\n[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"{nodename}/data\"\ntype = \"ext4\"\n"
	s, err := tomlfile.ParseService("svc.toml", "svc", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ForNode("n1", "/var/lib/haven/services/svc")
	want := `svc.toml:6: fs#data.mnt: "n1/data" is not an absolute path (expanded)`
	if err == nil || err.Error() != want {
		t.Fatalf("ForNode error = %v, want %s", err, want)
	}
	data = strings.Replace(data, "{nodename}/data", "/srv/{nodename}", 1)
	s, err = tomlfile.ParseService("svc.toml", "svc", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.ForNode("n1", "/var/lib/haven/services/svc")
	if err != nil || c.Resources[0].Mnt != "/srv/n1" {
		t.Fatalf("ForNode = %v, %v; want mnt /srv/n1", c, err)
	}
}

func TestServiceErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"syntax", "[DEFAULT]\nnodes = [\"n1\"\norchestrate = \"ha\"\n", "svc.toml:3: "},
		{"syntax key", "[DEFAULT]\nnodes = \n", "svc.toml:2: DEFAULT.nodes: syntax error"},
		{"syntax rid", "[app.web]\nstart = 'x\n", "svc.toml:2: app#web.start: syntax error"},
		{"unknown section", "[DEFAULT]\n\n[disk.data]\ndev = \"x\"\n", `svc.toml:3: disk: unknown section [disk]: want [DEFAULT], [app.NAME], [ip.NAME], [fs.NAME]`},
		{"unknown section single", "[env]\nfoo = \"x\"\n", `svc.toml:1: env: unknown section [env]`},
		{"key outside", "nodes = [\"n1\"]\n", "svc.toml:1: nodes: keyword outside of any section"},
		{"unknown key", "[DEFAULT]\norchestrate = \"ha\"\nbogus = 1\n", "svc.toml:3: DEFAULT.bogus: unknown keyword"},
		{"unknown resource key", "[app.web]\nstart = \"x\"\nipname = \"1.2.3.4\"\n", "svc.toml:3: app#web.ipname: unknown keyword"},
		{"app without name", "[app]\nstart = \"x\"\n", "svc.toml:2: app.start: keywords of app go in sections [app.NAME]"},
		{"bad resource name", "[app.\"we b\"]\nstart = \"x\"\n", `svc.toml:1: app#we b: invalid section name`},
		{"enum", "[DEFAULT]\n\norchestrate = \"yes\"\n", `svc.toml:3: DEFAULT.orchestrate: invalid value "yes": want one of "no", "start", "ha"`},
		{"placement", "[DEFAULT]\nplacement = \"random\"\n", `svc.toml:2: DEFAULT.placement: invalid value "random"`},
		{"monitor_action", "[DEFAULT]\nmonitor_action = \"panic\"\n", `svc.toml:2: DEFAULT.monitor_action: invalid value "panic"`},
		{"int type", "[DEFAULT]\npriority = \"high\"\n", "svc.toml:2: DEFAULT.priority: want an integer, got a string"},
		{"bool type", "[app.web]\nstart = \"x\"\nmonitor = \"yes\"\n", "svc.toml:3: app#web.monitor: want true or false"},
		{"list type", "[DEFAULT]\nnodes = [1, 2]\n", "svc.toml:2: DEFAULT.nodes: want a list of strings"},
		{"duration", "[app.web]\nstart = \"x\"\ntimeout = \"3x\"\n", `svc.toml:3: app#web.timeout: invalid duration "3x"`},
		{"duration neg", "[app.web]\nstart = \"x\"\ntimeout = -3\n", `svc.toml:3: app#web.timeout: duration -3 out of range`},
		{"duration zero", "[app.web]\nstart = \"x\"\ntimeout = 0\n", `svc.toml:3: app#web.timeout: must be more than 0`},
		{"probe_timeout zero", "[ip.vip]\nipname = \"10.0.0.9\"\nipdev = \"eth0\"\nprobe_timeout = 0\n", `svc.toml:4: ip#vip.probe_timeout: must be more than 0 and at most 10s`},
		{"probe_timeout long", "[ip.vip]\nipname = \"10.0.0.9\"\nipdev = \"eth0\"\nprobe_timeout = \"1m\"\n", `svc.toml:4: ip#vip.probe_timeout: must be more than 0 and at most 10s`},
		{"restart neg", "[app.web]\nstart = \"x\"\nrestart = -1\n", `svc.toml:3: app#web.restart: must not be negative`},
		{"restart_delay neg", "[app.web]\nstart = \"x\"\nrestart_delay = -1\n", `svc.toml:3: app#web.restart_delay: duration -1 out of range`},
		{"restart_delay_max short", "[app.web]\nstart = \"x\"\nrestart_delay = \"2s\"\nrestart_delay_max = \"1s\"\n", `svc.toml:4: app#web.restart_delay_max: 1s is less than restart_delay (2s)`},
		{"restart_window neg", "[app.web]\nstart = \"x\"\nrestart_window = \"-1m\"\n", `svc.toml:3: app#web.restart_window: `},
		{"monitor_action bad", "[DEFAULT]\nmonitor_action = \"explode\"\n", `svc.toml:2: DEFAULT.monitor_action: invalid value "explode"`},
		{"app empty", "[DEFAULT]\n[app.web]\ninfo = \"x\"\n", "svc.toml:2: app#web: an app needs at least one of start, stop, check"},
		{"app unbalanced quote", "[app.web]\nstart = \"true\"\ncheck = \"echo 'up\"\n", "svc.toml:3: app#web.check: "},
		{"ip no ipname", "[ip.vip]\nipdev = \"eth0\"\n", "svc.toml:1: ip#vip.ipname: required keyword missing"},
		{"ip no ipdev", "[ip.vip]\nipname = \"10.0.0.1\"\n", "svc.toml:1: ip#vip.ipdev: required keyword missing"},
		{"ip bad", "[ip.vip]\nipname = \"10.0.0.300\"\nipdev = \"eth0\"\n", `svc.toml:2: ip#vip.ipname: invalid IP address "10.0.0.300"`},
		{"netmask", "[ip.vip]\nipname = \"10.0.0.3\"\nipdev = \"eth0\"\nnetmask = \"x\"\n", `svc.toml:4: ip#vip.netmask: invalid netmask "x"`},
		{"netmask v4 prefix", "[ip.vip]\nipname = \"10.0.0.3\"\nipdev = \"eth0\"\nnetmask = \"33\"\n", `svc.toml:4: ip#vip.netmask: prefix length 33 out of range 0..32`},
		{"netmask 99", "[ip.vip]\nipname = \"10.0.0.3\"\nipdev = \"eth0\"\nnetmask = \"99\"\n", `svc.toml:4: ip#vip.netmask: prefix length 99 out of range 0..32`},
		{"netmask holes", "[ip.vip]\nipname = \"10.0.0.3\"\nipdev = \"eth0\"\nnetmask = \"255.0.255.0\"\n", `svc.toml:4: ip#vip.netmask: invalid netmask "255.0.255.0": its ones are not contiguous`},
		{"netmask v6 dotted", "[ip.vip]\nipname = \"fd00::3\"\nipdev = \"eth0\"\nnetmask = \"255.255.255.0\"\n", `svc.toml:4: ip#vip.netmask: dotted mask "255.255.255.0" for an IPv6 address`},
		{"netmask v6 prefix", "[ip.vip]\nipname = \"fd00::3\"\nipdev = \"eth0\"\nnetmask = \"129\"\n", `svc.toml:4: ip#vip.netmask: prefix length 129 out of range 0..128`},
		{"fs no dev", "[fs.data]\nmnt = \"/srv/data\"\ntype = \"ext4\"\n", "svc.toml:1: fs#data.dev: required keyword missing"},
		{"fs no mnt", "[fs.data]\ndev = \"/dev/sdb1\"\ntype = \"ext4\"\n", "svc.toml:1: fs#data.mnt: required keyword missing"},
		{"fs no type", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\n", "svc.toml:1: fs#data.type: required keyword missing"},
		{"fs empty dev", "[fs.data]\ndev = \" \"\nmnt = \"/srv/data\"\ntype = \"ext4\"\n", "svc.toml:2: fs#data.dev: must not be empty"},
		{"fs empty type", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\ntype = \"\"\n", "svc.toml:4: fs#data.type: must not be empty (auto lets mount probe the device)"},
		{"fs relative mnt", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"srv/data\"\ntype = \"ext4\"\n", `svc.toml:3: fs#data.mnt: "srv/data" is not an absolute path`},
		{"fs mnt root", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/..\"\ntype = \"ext4\"\n", "svc.toml:3: fs#data.mnt: cannot be the root directory /"},
		{"fs bad type", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\ntype = \"ext4,xfs\"\n", `svc.toml:4: fs#data.type: invalid filesystem type "ext4,xfs"`},
		{"fs mnt_opt blank", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\ntype = \"ext4\"\nmnt_opt = \"ro, noatime\"\n", `svc.toml:5: fs#data.mnt_opt: invalid mount options "ro, noatime": want comma separated options, no blanks`},
		{"fs force_unmount type", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\ntype = \"ext4\"\nforce_unmount = \"yes\"\n", "svc.toml:5: fs#data.force_unmount: want true or false"},
		{"fs unknown key", "[fs.data]\ndev = \"/dev/sdb1\"\nmnt = \"/srv/data\"\ntype = \"ext4\"\nipdev = \"eth0\"\n", "svc.toml:5: fs#data.ipdev: unknown keyword"},
		{"constraint syntax", "[DEFAULT]\nconstraints = \"nodename ==\"\n", "svc.toml:2: DEFAULT.constraints: compile"},
		{"constraint not bool", "[DEFAULT]\nconstraints = \"nodename\"\n", "svc.toml:2: DEFAULT.constraints: compile \"nodename\": expected bool"},
		{"bad parent", "[DEFAULT]\nparents = [\"Db!\"]\n", `svc.toml:2: DEFAULT.parents: invalid element "Db!"`},
		{"affinity with node", "[DEFAULT]\nhard_affinity = [\"db@n1\"]\n", `svc.toml:2: DEFAULT.hard_affinity: invalid element "db@n1": want a service name`},
		{"bad node", "[DEFAULT]\nnodes = [\"n 1\"]\n", `svc.toml:2: DEFAULT.nodes: invalid node name "n 1"`},
		{"unknown ref", "[app.web]\nstart = \"/bin/{foo.bar}\"\n", "svc.toml:2: app#web.start: unknown reference {foo.bar}"},
		{"unknown ref word", "[app.web]\nstart = \"/bin/{foo}\"\n", "svc.toml:2: app#web.start: unknown reference {foo}"},
		{"ref no section", "[app.web]\nstart = \"{app.db.start}\"\n", "svc.toml:2: app#web.start: unknown reference {app.db.start}: no section [app.db]"},
		{"ref no key", "[app.web]\nstart = \"{DEFAULT.nope}\"\n", `svc.toml:2: app#web.start: unknown reference {DEFAULT.nope}: no keyword "nope"`},
		{"ref loop", "[app.web]\nstart = \"{app.web.stop}\"\nstop = \"{app.web.start}\"\n", "svc.toml:2: app#web.start: reference {app.web.start}: reference loop"},
		{"rid in DEFAULT", "[DEFAULT]\nnodes = [\"{rid}\"]\n", "svc.toml:2: DEFAULT.nodes: reference {rid} outside of a resource section"},
		{"first error wins", "[DEFAULT]\norchestrate = \"x\"\nplacement = \"y\"\n", "DEFAULT.orchestrate"},
		{"first error wins 2", "[app.b]\nbad2 = 1\n[app.a]\nbad1 = 1\n", "svc.toml:2: app#b.bad2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tomlfile.ParseService("svc.toml", "svc", []byte(tt.data))
			if err == nil {
				t.Fatalf("ParseService: no error, want %q", tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %q is a %T, not a *config.Error", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestServiceName(t *testing.T) {
	for _, n := range []string{"web", "db-1", "a.b_c", "0x"} {
		if err := ValidServiceName(n); err != nil {
			t.Errorf("ValidServiceName(%q) = %v", n, err)
		}
	}
	for _, n := range []string{"", "Web", "-a", ".a", "a b", "a/b", "é"} {
		if ValidServiceName(n) == nil {
			t.Errorf("ValidServiceName(%q): want an error", n)
		}
	}
	if _, err := tomlfile.ParseService("Bad.toml", "Bad", []byte("")); err == nil || !strings.HasPrefix(err.Error(), "Bad.toml: invalid service name") {
		t.Errorf("tomlfile.ParseService(bad name) = %v", err)
	}
	long := strings.Repeat("a", MaxServiceName+1)
	if err := ValidServiceName(long); err == nil || !strings.Contains(err.Error(), "at most 200") {
		t.Errorf("ValidServiceName(%d characters) = %v, want the limit said", len(long), err)
	}
	if err := ValidNodeName(strings.Repeat("n", MaxNodeName+1)); err == nil || !strings.Contains(err.Error(), "at most 253") {
		t.Errorf("ValidNodeName(254 characters) = %v, want the limit said", err)
	}
}

// An empty file (or one of comments only) is refused, naming the file: a
// config cut short must not install a service that runs nothing.
func TestEmptyServiceConfigRefused(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# web\n# nothing else\n"} {
		_, err := tomlfile.ParseService("web.toml", "web", []byte(data))
		if err == nil || !strings.HasPrefix(err.Error(), "web.toml: empty config") {
			t.Errorf("ParseService(%q) = %v, want web.toml: empty config", data, err)
		}
	}
	if _, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\n")); err != nil {
		t.Errorf("a service of [DEFAULT] alone: %v", err)
	}
}

func TestNodeErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"[hb]\nport = 0\n", "node.toml:2: hb.port: port 0 out of range 1..65535"},
		{"[hb]\nport = 70000\n", "node.toml:2: hb.port: port 70000 out of range"},
		{"[hb]\naddr = \"x.y\"\n", `node.toml:2: hb.addr: invalid address "x.y"`},
		{"[hb]\ninterval = 0\n", "node.toml:2: hb.interval: must be more than 0"},
		{"[node]\nsplit_action = \"panic\"\n", `node.toml:2: node.split_action: invalid value "panic": want one of "crash", "reboot", "stop", "disabled"`},
		{"[node]\nname = \"\"\n", "node.toml:2: node.name: must not be empty"},
		{"[node]\nname = \"a b\"\n", `node.toml:2: node.name: invalid node name "a b"`},
		{"[node]\nlabels = { env = 1 }\n", "node.toml:2: node.labels: want a table of strings"},
		{"[node]\nready_period = \"soon\"\n", `node.toml:2: node.ready_period: invalid duration "soon"`},
		// 0 used to mean 16s silently
		{"[node]\nready_period = 0\n", "node.toml:2: node.ready_period: must be more than 0"},
		{"[node]\nready_period = \"0s\"\n", "node.toml:2: node.ready_period: must be more than 0"},
		{"[node]\n[hb]\nttl = 3\n", "node.toml:3: hb.ttl: unknown keyword"},
		{"[cluster]\nname = \"x\"\n", "node.toml:1: cluster: unknown section [cluster]: want [node], [hb]"},
		// checks across keys
		{"[hb]\ntimeout = \"5s\"\ninterval = \"5s\"\n", "node.toml:3: hb.interval: hb.interval 5s must be shorter than hb.timeout 5s"},
		{"[hb]\ntimeout = \"2s\"\n", "node.toml:2: hb.timeout: hb.interval 5s (the default) must be shorter than hb.timeout 2s"},
		{"[node]\nmetrics_addr = \":10000\"\n", `node.toml:2: node.metrics_addr: ":10000" uses the heartbeat port: hb.port 10000 (the default) on hb.addr "0.0.0.0" (the default)`},
		{"[node]\nmetrics_addr = \"localhost:10001\"\n[hb]\naddr = \"127.0.0.1\"\nport = 10001\n", `node.toml:2: node.metrics_addr: "localhost:10001" uses the heartbeat port`},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseNode("node.toml", []byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("tomlfile.ParseNode(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}

func TestClusterErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"[cluster]\nsecret = \"abc\"\n", "cluster.toml:2: cluster.secret: must be 64 hex digits"},
		{"[cluster]\nsecret = \"" + strings.Repeat("g", 64) + "\"\n", "cluster.toml:2: cluster.secret: must be 64 hex digits"},
		{"[nodes]\nn1 = \"10.0.0.1\"\n", `cluster.toml:2: nodes.n1: invalid address "10.0.0.1": want host:port`},
		{"[nodes]\nn1 = \"10.0.0.1:0\"\n", `cluster.toml:2: nodes.n1: invalid address "10.0.0.1:0": port "0" out of range`},
		{"[nodes]\nn1 = 10000\n", `cluster.toml:2: nodes.n1: want a list of strings`},
		{"[arbitrator.a]\nweight = 1\n", "cluster.toml:1: arbitrator.a.uri: required keyword missing"},
		{"[arbitrator.a]\nuri = \"ftp://10.0.0.9:22\"\n", `cluster.toml:2: arbitrator.a.uri: invalid uri "ftp://10.0.0.9:22": want http://, https://, tcp://host:port, or haven://host:port`},
		{"[arbitrator.a]\nuri = \"haven://10.0.0.9\"\n", `cluster.toml:2: arbitrator.a.uri: invalid uri "haven://10.0.0.9"`},
		{"[arbitrator.a]\nuri = \"haven://10.0.0.9:10400\"\n", `cluster.toml:2: arbitrator.a.uri: a one-vote arbitrator (haven://) authenticates the nodes with the cluster secret: set cluster.secret`},
		{"[arbitrator.a]\nuri = \"tcp://10.0.0.9\"\n", `cluster.toml:2: arbitrator.a.uri: invalid uri "tcp://10.0.0.9": want host:port`},
		{"[cluster]\nsecret = \"6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01\"\n[arbitrator.a]\nuri = \"haven://10.0.0.9:10400\"\nkey = \"AAAA\"\n", `cluster.toml:5: arbitrator.a.key: invalid node key "AAAA"`},
		{"[cluster]\nsecret = \"6b1d0c8f2e4a7c9b3d5f1e0a2c4b6d8f9e7a5c3b1d0f2e4a6c8b0d2f4e6a8c01\"\n[arbitrator.a]\nuri = \"haven://10.0.0.9:10400\"\nkey = \"" + strings.Repeat("A", 43) + "=\"\n", `cluster.toml:5: arbitrator.a.key: invalid node key`},
		{"[arbitrator.a]\nuri = \"tcp://10.0.0.9:22\"\nkey = \"AAAA\"\n", `cluster.toml:3: arbitrator.a.key: only a one-vote arbitrator (haven://) has a key`},
		{"[arbitrator.a]\nuri = \"tcp://10.0.0.9:22\"\ntimeout = 0\n", `cluster.toml:3: arbitrator.a.timeout: must be more than 0`},
		{"[stonith.n1]\ntimeout = \"5s\"\n", "cluster.toml:1: stonith.n1.command: required keyword missing"},
		{"[stonith.n9]\ncommand = \"true\"\n", "cluster.toml:2: stonith.n9.command: [stonith.n9]: n9 is not a cluster member ([nodes])"},
		{"[stonith.n1]\ncommand = \"true\"\ntimeout = 0\n", "cluster.toml:3: stonith.n1.timeout: must be more than 0"},
		{"[cluster]\nquorum = \"yes\"\n", "cluster.toml:2: cluster.quorum: want true or false"},
		{"[DEFAULT]\n", "cluster.toml:1: DEFAULT: unknown section [DEFAULT]"},
		// weak secrets (all zeros, one byte, a short pattern, a counter)
		{"[cluster]\nsecret = \"" + strings.Repeat("0", 64) + "\"\n", "cluster.toml:2: cluster.secret: too weak: only 1 distinct byte values among its 32 bytes"},
		{"[cluster]\nsecret = \"" + strings.Repeat("5e", 32) + "\"\n", "cluster.toml:2: cluster.secret: too weak: only 1 distinct"},
		{"[cluster]\nsecret = \"" + strings.Repeat("0123456789abcdef", 4) + "\"\n", "cluster.toml:2: cluster.secret: too weak: only 8 distinct"},
		{"[cluster]\nsecret = \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"\n", "cluster.toml:2: cluster.secret: too weak: its bytes step by a constant"},
		{"[cluster]\nname = \"" + strings.Repeat("c", 256) + "\"\n", "cluster.toml:2: cluster.name: longer than 255 bytes"},
	}
	for _, tt := range tests {
		_, err := tomlfile.ParseCluster("cluster.toml", []byte(tt.data), "n1")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("tomlfile.ParseCluster(%q) = %v, want %q", tt.data, err, tt.want)
		}
	}
}
func TestServiceDefaults(t *testing.T) {
	s, err := tomlfile.ParseService("svc.toml", "svc", []byte("[app.a]\nstart = \"true\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 0 || s.Orchestrate != "no" || s.Placement != "nodes order" ||
		s.MonitorAction != "none" || s.Priority != 100 || s.Constraint != nil || len(s.Resources) != 1 {
		t.Errorf("defaults: %+v", s)
	}
	r := s.Resources[0]
	if r.RID != "app#a" || r.Timeout != 30*time.Second || r.RestartDelay != 500*time.Millisecond || r.Monitor || r.Restart != 0 {
		t.Errorf("resource defaults: %+v", r)
	}
	s.Nodes = []string{"n3", "*"}
	if got := s.NodeList([]string{"n1", "n3"}); !reflect.DeepEqual(got, []string{"n3", "n1"}) {
		t.Errorf("NodeList = %v", got)
	}
}

// A service listing itself as its parent waits forever, as its affinity
// means nothing: refused, naming the key.
func TestServiceListsItself(t *testing.T) {
	for _, key := range []string{"parents", "children", "hard_affinity", "hard_anti_affinity", "soft_affinity", "soft_anti_affinity"} {
		for _, v := range []string{`"web"`, `"db", "web@n1"`} {
			if key != "parents" && key != "children" && strings.Contains(v, "@") {
				continue
			}
			data := "[DEFAULT]\n" + key + " = [" + v + "]\n"
			_, err := tomlfile.ParseService("web.toml", "web", []byte(data))
			if err == nil || !strings.Contains(err.Error(), "web.toml:2: DEFAULT."+key+": names the service itself") {
				t.Errorf("%s = [%s]: got %v", key, v, err)
			}
		}
	}
	if _, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nparents = [\"db\"]\n")); err != nil {
		t.Errorf("parents = [db]: %v", err)
	}
}

// Every error of a file is reported, each with its line and key, not the
// first only; errors.As still finds a *Error (exit status 2).
func TestEveryErrorOfAFile(t *testing.T) {
	data := "[DEFAULT]\norchestrate = \"sometimes\"\nnodez = [\"n1\"]\n\n[app.web]\nstart = \"true\"\ntimeout = \"ten\"\n"
	_, err := tomlfile.ParseService("svc.toml", "svc", []byte(data))
	for _, want := range []string{"svc.toml:2: DEFAULT.orchestrate:", "svc.toml:3: DEFAULT.nodez: unknown keyword", "svc.toml:7: app#web.timeout:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 {
		t.Errorf("errors.As: %v, first line %d, want 2", e, e.Line)
	}
	// the checks of the decoded values: each resource's
	data = "[ip.a]\nipname = \"10.0.0.1\"\nipdev = \"eth0\"\nnetmask = \"33\"\n\n[ip.b]\nipname = \"nope\"\nipdev = \"eth0\"\n"
	_, err = tomlfile.ParseService("svc.toml", "svc", []byte(data))
	for _, want := range []string{"ip#a.netmask", "ip#b.ipname"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
}

// A config too large for create is refused by validate too, naming the
// file and the limit.
func TestServiceConfigTooLarge(t *testing.T) {
	data := "[DEFAULT]\n# " + strings.Repeat("x", MaxServiceConfig) + "\n"
	_, err := tomlfile.ParseService("big.toml", "big", []byte(data))
	if err == nil || !strings.HasPrefix(err.Error(), "big.toml: 513 KiB: a service config is at most 512 KiB") {
		t.Fatalf("ParseService of %d bytes: %v", len(data), err)
	}
}
