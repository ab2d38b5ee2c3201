package config_test

import (
	"strings"
	"testing"

	"haven/config"
	"haven/config/tomlfile"
)

// request_cpu and request_mem of a service, capacity_cpu and capacity_mem
// of a node: the forms they take, and bad values refused with the file,
// the line and the key.
func TestRequestsAndCapacity(t *testing.T) {
	cfg, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\nrequest_cpu = 0.5\nrequest_mem = \"512MiB\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RequestCPU != 500 || cfg.RequestMem != 512<<20 || !cfg.HasRequests() {
		t.Fatalf("requests %d %d", cfg.RequestCPU, cfg.RequestMem)
	}
	plain, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\n"))
	if err != nil || plain.HasRequests() {
		t.Fatalf("no request: %v %v", err, plain.HasRequests())
	}
	nc, err := tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\ncapacity_cpu = 6\ncapacity_mem = \"60GiB\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if nc.CapacityCPU != 6000 || nc.CapacityMem != 60<<30 {
		t.Fatalf("capacity %d %d", nc.CapacityCPU, nc.CapacityMem)
	}
	for _, tt := range []struct {
		in   string
		cpu  config.MilliCPU
		mem  config.Bytes
		text string
	}{
		{"request_cpu = 2\nrequest_mem = 1073741824\n", 2000, 1 << 30, ""},
		{"request_cpu = \"250m\"\nrequest_mem = \"1.5G\"\n", 250, 1500000000, ""},
		{"request_cpu = \"1.125\"\nrequest_mem = \"2Gi\"\n", 1125, 2 << 30, ""},
		{"request_cpu = 0.001\nrequest_mem = \"100 KB\"\n", 1, 100000, ""},
	} {
		c, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\n"+tt.in))
		if err != nil || c.RequestCPU != tt.cpu || c.RequestMem != tt.mem {
			t.Errorf("%q: %v cpu %d mem %d, want %d %d", tt.in, err, c.RequestCPU, c.RequestMem, tt.cpu, tt.mem)
		}
	}
	bad := []struct{ name, data, want string }{
		{"cpu negative", "request_cpu = -1\n", "w.toml:3: DEFAULT.request_cpu: cpu -1 out of range"},
		{"cpu 4 decimals", "request_cpu = 0.0005\n", "w.toml:3: DEFAULT.request_cpu: cpu 0.0005: at most 3 decimals"},
		{"cpu word", "request_cpu = \"lots\"\n", `w.toml:3: DEFAULT.request_cpu: invalid cpu "lots"`},
		{"cpu bool", "request_cpu = true\n", "w.toml:3: DEFAULT.request_cpu: want a number of cores"},
		{"mem no unit known", "request_mem = \"512XB\"\n", `w.toml:3: DEFAULT.request_mem: invalid size "512XB"`},
		{"mem negative", "request_mem = \"-5MiB\"\n", `w.toml:3: DEFAULT.request_mem: invalid size "-5MiB"`},
		{"mem float", "request_mem = 1.5\n", "w.toml:3: DEFAULT.request_mem: want a size"},
		{"mem huge", "request_mem = \"2000000TiB\"\n", "w.toml:3: DEFAULT.request_mem: size \"2000000TiB\" out of range"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tomlfile.ParseService("w.toml", "w", []byte("[DEFAULT]\nnodes = [\"n1\"]\n"+tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	_, err = tomlfile.ParseNode("node.toml", []byte("[node]\nname = \"n1\"\ncapacity_mem = \"lots\"\n"))
	if err == nil || !strings.Contains(err.Error(), `node.toml:3: node.capacity_mem: invalid size "lots"`) {
		t.Fatalf("bad capacity_mem: %v", err)
	}
}

// The printed forms read back as the same value.
func TestQuantityStrings(t *testing.T) {
	for _, m := range []config.MilliCPU{0, 1, 500, 1000, 1250, 64000} {
		if back, err := config.ParseCPU(m.String()); err != nil || back != m {
			t.Errorf("cpu %d: %q -> %d %v", m, m.String(), back, err)
		}
	}
	for _, b := range []config.Bytes{0, 1, 1000, 1 << 10, 512 << 20, 1536 << 20, 3 << 40} {
		if back, err := config.ParseSize(b.String()); err != nil || back != b {
			t.Errorf("size %d: %q -> %d %v", b, b.String(), back, err)
		}
	}
	if s := config.Bytes(15 << 29).Short(); s != "7.5GiB" {
		t.Errorf("short %q", s)
	}
}
