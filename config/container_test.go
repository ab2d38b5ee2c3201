package config_test

import (
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/config/tomlfile"
)

// TestContainerSection: a [container.NAME] section, its values (a
// reference expanded per node), its place in the start order (after ip,
// fs and ocf, before app), and each refusal naming the line and the key.
func TestContainerSection(t *testing.T) {
	data := `[DEFAULT]
nodes = ["n1"]

[app.after]
check = "true"

[ip.vip]
ipname = "10.0.0.5"
ipdev = "eth0"

[container.web]
image = "localhost/web:{nodename}"
command = ["httpd", "-f", "-p", "8080"]
env = { PORT = "8080" }
volumes = ["/srv/web:/data:ro"]
user = "1000:1000"
read_only = true
memory = "256m"
cpus = "0.5"
stop_timeout = "3s"
env_file = "/etc/web/{nodename}.env"
cap_drop = ["ALL"]
cap_add = ["NET_BIND_SERVICE", "CAP_CHOWN"]
healthcheck = "wget -q -O /dev/null http://127.0.0.1:8080/"
pull = "always"
`
	s, err := tomlfile.ParseService("web.toml", "web", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range s.Resources {
		order = append(order, r.RID)
	}
	if strings.Join(order, " ") != "ip#vip container#web app#after" {
		t.Fatalf("start order %v", order)
	}
	e, err := s.ForNode("n1", "/var/lib/haven/services/web")
	if err != nil {
		t.Fatal(err)
	}
	c := e.Resources[1]
	if c.Engine != "podman" || c.Image != "localhost/web:n1" || c.Network != "host" ||
		strings.Join(c.Command, " ") != "httpd -f -p 8080" || c.ContainerEnv["PORT"] != "8080" || !c.ReadOnly ||
		c.StopTimeout != 3*time.Second || c.Memory != "256m" || c.CPUs != "0.5" || c.User != "1000:1000" ||
		c.EnvFile != "/etc/web/n1.env" || strings.Join(c.CapDrop, " ") != "ALL" || strings.Join(c.CapAdd, " ") != "NET_BIND_SERVICE CAP_CHOWN" ||
		c.Healthcheck != "wget -q -O /dev/null http://127.0.0.1:8080/" || c.Pull != "always" {
		t.Fatalf("container: %+v", c)
	}

	bad := []struct{ body, want string }{
		{"engine = \"docker\"\nrootfs = \"/srv/root\"", `web.toml:6: container#web.rootfs: docker runs images only`},
		{"engine = \"docker\"\nimage = \"x\"\nhealthcheck = \"a\\nb\"", "web.toml:7: container#web.healthcheck: the health command is one line"},
		{`command = ["true"]`, "container#web.image: a container needs an image"},
		{"image = \"x\"\nrootfs = \"/srv/root\"", "container#web.rootfs: set image or rootfs, not both"},
		{`rootfs = "srv/root"`, `container#web.rootfs: "srv/root": want an absolute path`},
		{"image = \"x\"\nnetwork = \"none\"", `web.toml:6: container#web.network: "none": want "host"`},
		{"image = \"x\"\nenv = { HAVEN_FENCING_TOKEN = \"1\" }", "container#web.env: HAVEN_FENCING_TOKEN is set by Haven"},
		{"image = \"x\"\nenv = { \"A-B\" = \"1\" }", `container#web.env: invalid variable name "A-B"`},
		{"image = \"x\"\nvolumes = [\"data:/data\"]", "named volumes are not built"},
		{"image = \"x\"\nvolumes = [\"/data\"]", "want HOST:CONTAINER"},
		{"image = \"x\"\nmemory = \"lots\"", `container#web.memory: invalid memory limit "lots"`},
		{"image = \"x\"\ncpus = \"0\"", `container#web.cpus: invalid CPU limit "0"`},
		{"image = \"x\"\nstop_timeout = \"1500ms\"", "container#web.stop_timeout: 1.5s: want whole seconds"},
		{"image = \"x\"\nstop_timeout = \"30s\"", "container#web.stop_timeout: 30s is not less than timeout (30s)"},
		{"image = \"x\"\npull = \"sometimes\"", `container#web.pull`},
		{"rootfs = \"/srv/root\"\npull = \"always\"", `container#web.pull: a rootfs is not pulled`},
		{"image = \"x\"\nports = [\"80:80\"]", `web.toml:6: container#web.ports: published ports need network = "bridge" (network is "host"`},
		{"image = \"x\"\nhealthcheck = true", "container#web.healthcheck"},
		{"image = \"x\"\nhealthcheck = \"a\\nb\"", "web.toml:6: container#web.healthcheck: the health command is one line"},
		{"image = \"x\"\ncap_add = [\"NET ADMIN\"]", `web.toml:6: container#web.cap_add: invalid capability "NET ADMIN"`},
		{"image = \"x\"\ncap_drop = [\"--privileged\"]", `container#web.cap_drop: invalid capability "--privileged"`},
		{"image = \"x\"\nenv_file = \"web.env\"", `web.toml:6: container#web.env_file: "web.env": want the absolute path of a file`},
		{"image = \"x\"\nbogus = 1", "container#web.bogus"},
	}
	for _, b := range bad {
		data := "[DEFAULT]\nnodes = [\"n1\"]\n\n[container.web]\n" + b.body + "\n"
		_, err := tomlfile.ParseService("web.toml", "web", []byte(data))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: got %v, want %q", b.body, err, b.want)
		}
	}
	// docker is an engine of its own, with an image
	sc, err := tomlfile.ParseService("web.toml", "web", []byte("[DEFAULT]\nnodes = [\"n1\"]\n\n[container.web]\nengine = \"docker\"\nimage = \"localhost/web:1\"\n"))
	if err != nil || sc.Resources[0].Engine != "docker" {
		t.Fatalf("engine = docker: %v", err)
	}
}

// TestContainerEnvNodeKeyword: node.toml container_env, and a variable
// name the environment cannot hold refused with its line.
func TestContainerEnvNodeKeyword(t *testing.T) {
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\ncontainer_env = { CONTAINERS_STORAGE_CONF = \"/etc/haven/storage.conf\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n.ContainerEnv["CONTAINERS_STORAGE_CONF"] != "/etc/haven/storage.conf" {
		t.Fatalf("container_env %v", n.ContainerEnv)
	}
	_, err = tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\ncontainer_env = { \"A=B\" = \"x\" }\n"))
	if err == nil || !strings.Contains(err.Error(), `node.toml:3: node.container_env: invalid variable "A=B"`) {
		t.Fatalf("got %v", err)
	}
}

// TestContainerPorts: network = "bridge" with published ports, the forms
// accepted (an address, none, a reference to the service's ip resource,
// udp) and each refusal naming the file, the line and the key; a host
// port published twice by the service, literally or once the reference
// is expanded.
func TestContainerPorts(t *testing.T) {
	head := "[DEFAULT]\nnodes = [\"n1\"]\n\n[ip.vip]\nipname = \"192.0.2.50\"\nipdev = \"eth0\"\n\n[container.web]\nimage = \"x\"\n"
	s, err := tomlfile.ParseService("web.toml", "web", []byte(head+
		"network = \"bridge\"\nports = [\"{ip#vip.ipname}:8080:80\", \"8443:443\", \"192.0.2.51:8080:80\", \"[{ip.vip.ipname}]:53:53/udp\", \"192.0.2.50:8080:80/udp\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Resources[1]
	if c.Network != "bridge" || len(c.Ports) != 5 {
		t.Fatalf("container: %+v", c)
	}
	// the reference to the VIP is expanded per node; the bracketed one
	// expands to an IPv4 address in brackets: refused once expanded
	if _, err := s.ForNode("n1", "/var/lib/haven/services/web"); err == nil || !strings.Contains(err.Error(), `web.toml:11: container#web.ports: "[192.0.2.50]:53:53/udp": "192.0.2.50" in brackets is not an IPv6 address (expanded)`) {
		t.Fatalf("expanded: %v", err)
	}
	s, err = tomlfile.ParseService("web.toml", "web", []byte(head+"network = \"bridge\"\nports = [\"{ip#vip.ipname}:8080:80\", \"8443:443\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.ForNode("n1", "/var/lib/haven/services/web")
	if err != nil || strings.Join(e.Resources[1].Ports, " ") != "192.0.2.50:8080:80 8443:443" {
		t.Fatalf("expanded: %v %v", e, err)
	}
	// docker's bridge too
	if _, err := tomlfile.ParseService("web.toml", "web", []byte(head+"engine = \"docker\"\nnetwork = \"bridge\"\nports = [\"8080:80\"]\n")); err != nil {
		t.Fatalf("docker: %v", err)
	}
	for _, tt := range []struct{ in, ip, proto string }{
		{"8080:80", "", "tcp"}, {"0.0.0.0:1:65535/udp", "0.0.0.0", "udp"}, {"10.0.0.1:8080:80/tcp", "10.0.0.1", "tcp"},
	} {
		p, err := config.ParsePort(tt.in)
		if err != nil || p.IP != tt.ip || p.Proto != tt.proto || p.Host == 0 || p.Container == 0 {
			t.Errorf("%q: %+v %v", tt.in, p, err)
		}
	}

	bad := []struct{ body, want string }{
		{"network = \"bridge\"\nports = [\"80\"]", `web.toml:11: container#web.ports: "80": want [IP:]HOSTPORT:CONTAINERPORT[/tcp|/udp] (the host port is needed`},
		{"network = \"bridge\"\nports = [\"0:80\"]", `web.toml:11: container#web.ports: "0:80": host port 0 out of range 1..65535`},
		{"network = \"bridge\"\nports = [\"80:65536\"]", `container#web.ports: "80:65536": container port 65536 out of range 1..65535`},
		{"network = \"bridge\"\nports = [\"8000-8010:80\"]", `container#web.ports: "8000-8010:80": host port "8000-8010" is not a number`},
		{"network = \"bridge\"\nports = [\"80:80/sctp\"]", `container#web.ports: "80:80/sctp": protocol "sctp": want tcp or udp`},
		{"network = \"bridge\"\nports = [\"web.example:80:80\"]", `container#web.ports: "web.example:80:80": "web.example" is not an IPv4 address`},
		{"network = \"bridge\"\nports = [\":80:80\"]", `container#web.ports: ":80:80": an empty address`},
		{"network = \"bridge\"\nports = [\"fd00::5:80:80\"]", `container#web.ports: "fd00::5:80:80": want [IP:]HOSTPORT:CONTAINERPORT[/tcp|/udp] (an IPv6 address goes in brackets`},
		{"network = \"bridge\"\nports = [\"[fd00::5]:80:80\"]", `container#web.ports: "[fd00::5]:80:80": IPv6 is not built`},
		{"network = \"bridge\"\nports = [\"[fd00::5:80:80\"]", `container#web.ports: "[fd00::5:80:80": want [IP:]HOSTPORT`},
		{"network = \"host\"\nports = [\"80:80\"]", `web.toml:11: container#web.ports: published ports need network = "bridge" (network is "host"`},
		{"network = \"bridge\"\nports = [\"8080:80\", \"192.0.2.50:8080:81\"]", `web.toml:11: container#web.ports: "192.0.2.50:8080:81": host port 8080/tcp is published twice in container#web ("8080:80")`},
		{"network = \"bridge\"\nports = [\"{ip#vip.ipname}:8080:80\", \"192.0.2.50:8080:81\"]", `web.toml:11: container#web.ports: "192.0.2.50:8080:81": host port 8080/tcp is published twice in container#web ("192.0.2.50:8080:80"): a node can forward it to one container only (expanded)`},
		{"network = \"bridge\"\nports = [\"8080:80\"]\n\n[container.api]\nimage = \"y\"\nnetwork = \"bridge\"\nports = [\"127.0.0.1:8080:80\"]", `web.toml:16: container#api.ports: "127.0.0.1:8080:80": host port 8080/tcp is published by container#web too ("8080:80")`},
	}
	for _, b := range bad {
		s, err := tomlfile.ParseService("web.toml", "web", []byte(head+b.body+"\n"))
		if err == nil {
			_, err = s.ForNode("n1", "/var/lib/haven/services/web")
		}
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: got %v, want %q", b.body, err, b.want)
		}
	}
}
