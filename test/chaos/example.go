package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Example services a person can watch in the bed (`make bed EXAMPLE=NAME`,
// `chaos bed -example NAME`): each is the [DEFAULT] lines of a service
// whose app is the suite's (a sleep journaled like the test services'), so
// that the bed shows how the cluster places them without any software of
// their own. docs/operations.md shows the same services with real commands.
var Examples = map[string][]ExampleService{
	// three tiers: a failover database, an application tier of three
	// flex instances that need the database and reserve CPU and memory,
	// and a log shipper on every node
	"shop": {
		{Name: "db", Defaults: "nodes = [\"*\"]\norchestrate = \"ha\"\nrequest_cpu = 1\nrequest_mem = \"512MiB\"\n"},
		{Name: "app", Defaults: "nodes = [\"*\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = {three}\nflex_min = 1\nparents = [\"db\"]\nrequest_cpu = 0.5\nrequest_mem = \"256MiB\"\n"},
		{Name: "logs", Defaults: "nodes = [\"*\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = \"all\"\n"},
	},
	// a failover web server in a container (podman, an image built
	// offline from busybox-static) behind a virtual IP: the address and
	// the container move together
	"web-container": {
		{Name: "web", Defaults: "nodes = [\"*\"]\norchestrate = \"ha\"\n", Body: fmt.Sprintf(`[ip.vip]
ipname = %q
ipdev = %q
netmask = "24"

[container.web]
image = %q
command = ["sh", "-c", "echo hello from $HAVEN_NODENAME > /tmp/index.html && exec httpd -f -p %s:8080 -h /tmp"]
stop_timeout = "2s"
monitor = true
`, ExampleVIP, Dev, ExampleImage, ExampleVIP)},
	},
}

// ExampleVIP is the virtual IP of the container example, on the bed's
// subnet; ExampleImage its image, imported in every node's store.
const (
	ExampleVIP   = Subnet + "100"
	ExampleImage = "localhost/hbox:1"
)

// ExampleNeedsPodman reports whether example name has a container
// resource: the bed then gives each node a podman store (Config.Podman).
func ExampleNeedsPodman(name string) bool {
	for _, s := range Examples[name] {
		if strings.Contains(s.Body, "[container.") {
			return true
		}
	}
	return false
}

// ExampleService is one service of an example: its name and [DEFAULT]
// lines ({three} is min(3, the cluster's size)), and its resources (Body),
// or none for the suite's app.
type ExampleService struct {
	Name     string
	Defaults string
	Body     string
}

// ExampleNames are the examples, sorted.
func ExampleNames() []string {
	var out []string
	for n := range Examples {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// CreateExample installs the services of example name from n1, each with
// the suite's app scripts, and waits until every one is up somewhere. It
// returns their configs' paths (in the work directory).
func (c *Cluster) CreateExample(name string) ([]string, error) {
	ex, ok := Examples[name]
	if !ok {
		return nil, fmt.Errorf("unknown example %q (known: %s)", name, strings.Join(ExampleNames(), ", "))
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, err
	}
	n := c.Nodes[c.Names[0]]
	var files []string
	for _, s := range ex {
		if err := os.Symlink(sleep, c.App(s.Name)); err != nil && !os.IsExist(err) {
			return nil, err
		}
		args := " {name} {nodename} {var}"
		defaults := strings.ReplaceAll(s.Defaults, "{three}", strconv.Itoa(min(3, len(c.Names))))
		cfg := fmt.Sprintf("[DEFAULT]\n%s\n[app.main]\nstart = %q\nstop = %q\ncheck = %q\nmonitor = true\n",
			defaults, filepath.Join(c.Work, "start.sh")+args, filepath.Join(c.Work, "stop.sh")+args, filepath.Join(c.Work, "check.sh")+args)
		if s.Body != "" {
			cfg = fmt.Sprintf("[DEFAULT]\n%s\n%s", defaults, s.Body)
		}
		file := filepath.Join(c.Work, s.Name+".toml")
		if err := writeFile(file, cfg, 0o644); err != nil {
			return nil, err
		}
		if err := n.must(30*time.Second, "svcmgr", "-s", s.Name, "create", "--config", file); err != nil {
			return nil, err
		}
		files = append(files, file)
		c.example = append(c.example, ExampleService{Name: s.Name, Defaults: defaults, Body: s.Body})
	}
	err = waitUntil(60*time.Second, func() bool {
		st, err := n.Status()
		if err != nil {
			return false
		}
		for _, s := range ex {
			if st.Services[s.Name].Avail != "up" && st.Services[s.Name].Avail != "warn" {
				return false
			}
		}
		return true
	}, "the example's services up within 60s")
	return files, err
}
