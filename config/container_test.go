package config_test

import (
	"strings"
	"testing"
	"time"

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
		{"image = \"x\"\nnetwork = \"bridge\"", `web.toml:6: container#web.network: "bridge": only "host" is built`},
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
		{"image = \"x\"\nports = [\"80:80\"]", `web.toml:6: container#web.ports: not implemented yet (published ports need a private network; only network = "host" is built`},
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
