package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestKeywordTable(t *testing.T) {
	seen := map[string]bool{}
	for i := range Keywords {
		kw := &Keywords[i]
		id := kw.Section + "." + kw.Key
		if seen[id] {
			t.Errorf("%s: duplicate keyword", id)
		}
		seen[id] = true
		if kw.Doc == "" {
			t.Errorf("%s: no doc", id)
		}
		if kw.Type == TypeEnum && !contains(kw.Allowed, kw.Default) {
			t.Errorf("%s: default %q not allowed", id, kw.Default)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: bad default: %v", id, r)
				}
			}()
			defaultValue(kw)
		}()
		if kw.Field == "" {
			if kw.Section != SectionNodes {
				t.Errorf("%s: no field", id)
			}
			continue
		}
		var typ reflect.Type
		switch kw.Section {
		case SectionNode:
			typ = reflect.TypeOf(NodeConfig{})
		case SectionHB:
			typ = reflect.TypeOf(HBConfig{})
		case SectionCluster:
			typ = reflect.TypeOf(ClusterConfig{})
		case SectionArbitrator:
			typ = reflect.TypeOf(Arbitrator{})
		case SectionDefault:
			typ = reflect.TypeOf(ServiceConfig{})
		default:
			typ = reflect.TypeOf(ResourceConfig{})
		}
		f, ok := typ.FieldByName(kw.Field)
		if !ok {
			t.Errorf("%s: no field %s in %s", id, kw.Field, typ)
			continue
		}
		if got := reflect.TypeOf(defaultValue(kw)); got != f.Type {
			t.Errorf("%s: field %s is %s, value is %s", id, kw.Field, f.Type, got)
		}
	}
}

func TestKeywordsDocUpToDate(t *testing.T) {
	path := filepath.Join("..", "docs", "keywords.md")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go generate ./config)", err)
	}
	if string(got) != KeywordsMarkdown() {
		t.Errorf("%s is not up to date: run go generate ./config", path)
	}
	for i := range Keywords {
		if !strings.Contains(string(got), "`"+Keywords[i].Key+"`") {
			t.Errorf("keyword %s missing from the doc", Keywords[i].Key)
		}
	}
}

func TestLoadNodeDefaults(t *testing.T) {
	c, err := LoadNode(filepath.Join(t.TempDir(), "node.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &NodeConfig{
		File:                   c.File,
		Name:                   shortHostname(),
		Labels:                 map[string]string{},
		ReadyPeriod:            16 * time.Second,
		MaintenanceGracePeriod: 60 * time.Second,
		RejoinGracePeriod:      90 * time.Second,
		SplitAction:            "crash",
		MonitorInterval:        5 * time.Second,
		CheckInterval:          60 * time.Second,
		HB:                     HBConfig{Addr: "0.0.0.0", Port: 10000, Timeout: 15 * time.Second, Interval: 5 * time.Second},
		lines:                  c.lines,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("LoadNode(missing) = %+v, want %+v", c, want)
	}
	if strings.Contains(c.Name, ".") || c.Name == "" {
		t.Errorf("name %q is not a short host name", c.Name)
	}
}

func TestLoadNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.toml")
	data := `[node]
name = "n1"
labels = { env = "PRD", az = "a" }
ready_period = 2
split_action = "stop"
monitor_interval = "500ms"

[hb]
addr = "127.0.0.1"
port = 10001
timeout = "3s"
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadNode(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "n1" || c.Labels["env"] != "PRD" || c.Labels["az"] != "a" || c.ReadyPeriod != 2*time.Second ||
		c.SplitAction != "stop" || c.MonitorInterval != 500*time.Millisecond || c.CheckInterval != time.Minute ||
		c.HB.Addr != "127.0.0.1" || c.HB.Port != 10001 || c.HB.Timeout != 3*time.Second || c.HB.Interval != 5*time.Second {
		t.Errorf("LoadNode = %+v", c)
	}
}

func TestLoadCluster(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadCluster(filepath.Join(dir, "cluster.toml"), "n9")
	if err != nil {
		t.Fatal(err)
	}
	want := &ClusterConfig{File: c.File, Name: "default", Nodes: []Member{{Name: "n9", Addr: "127.0.0.1:10000"}}, lines: c.lines}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("LoadCluster(missing) = %+v, want %+v", c, want)
	}

	secret := strings.Repeat("0123456789abcdef", 4)
	path := filepath.Join(dir, "c.toml")
	data := `[cluster]
name = "prod"
secret = "` + secret + `"
quorum = true

[nodes]
n2 = "127.0.0.1:10002"
n1 = "127.0.0.1:10001"

[arbitrator.b]
uri = "tcp://10.0.0.9:22"
[arbitrator.a]
uri = "http://10.0.0.9:8080/"
weight = 2
timeout = "1s"
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = LoadCluster(path, "n1")
	if err != nil {
		t.Fatal(err)
	}
	want = &ClusterConfig{
		File: path, Name: "prod", Secret: secret, Quorum: true,
		Nodes: []Member{{Name: "n1", Addr: "127.0.0.1:10001"}, {Name: "n2", Addr: "127.0.0.1:10002"}},
		Arbitrators: []Arbitrator{
			{Name: "a", URI: "http://10.0.0.9:8080/", Weight: 2, Timeout: time.Second},
			{Name: "b", URI: "tcp://10.0.0.9:22", Weight: 1, Timeout: 5 * time.Second},
		},
		explicit: true, lines: c.lines,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("LoadCluster = %+v, want %+v", c, want)
	}
	if got := c.NodeNames(); !reflect.DeepEqual(got, []string{"n1", "n2"}) {
		t.Errorf("NodeNames = %v", got)
	}
}

func TestServiceDefaults(t *testing.T) {
	s, err := ParseService("svc.toml", "svc", []byte("[app.a]\nstart = \"true\"\n"))
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
