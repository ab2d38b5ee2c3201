package config_test

import (
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

func TestSetGetUnset(t *testing.T) {
	data := []byte(goodService)
	steps := []struct {
		op, kw  string // op: set, unset, get
		want    string // get: the value; set/unset: "" or an error substring
		wantErr bool
	}{
		{"get", "DEFAULT.orchestrate", "ha", false},
		{"get", "orchestrate", "ha", false},
		{"get", "app#web.restart", "0", false},
		{"get", "app.web.restart", "0", false},
		{"get", "app#web.restart_delay", "500ms", false},
		{"get", "ip#vip.timeout", "5s", false}, // ip: its own default
		{"get", "DEFAULT.nodes", `["n1", "n2", "n3"]`, false},
		{"get", "DEFAULT.children", `[]`, false},
		{"set", "DEFAULT.orchestrate=start", "", false},
		{"get", "DEFAULT.orchestrate", "start", false},
		{"set", "app#web.restart=-1", "app#web.restart: must not be negative", true},
		{"get", "app.web.restart", "0", false},
		{"set", "app#web.restart=5", "", false},
		{"get", "app.web.restart", "5", false},
		{"set", "app.web.timeout=45", "", false},
		{"get", "app#web.timeout", "45s", false},
		{"set", "DEFAULT.nodes+=n4", "", false},
		{"set", "DEFAULT.nodes+=n1 n5", "", false},
		{"get", "DEFAULT.nodes", `["n1", "n2", "n3", "n4", "n5"]`, false},
		{"set", "DEFAULT.nodes-=n2 n4", "", false},
		{"get", "DEFAULT.nodes", `["n1", "n3", "n5"]`, false},
		{"set", `DEFAULT.children=["a", "b"]`, "", false},
		{"get", "DEFAULT.children", `["a", "b"]`, false},
		{"set", "DEFAULT.soft_affinity+=x", "", false},
		{"get", "DEFAULT.soft_affinity", `["x"]`, false},
		{"add", `app#new.start=/bin/echo "hi {rid}"`, "", false},
		{"get", "app#new.start", `/bin/echo "hi {rid}"`, false},
		{"set", "app#new.monitor=true", "", false},
		{"get", "app#new.monitor", "true", false},
		{"unset", "app#new", "", false},
		{"get", "app#new.start", "no section [app.new]", true},
		{"unset", "app#web.restart", "", false},
		{"get", "app#web.restart", "0", false},
		{"unset", "DEFAULT.orchestrate", "", false},
		{"get", "DEFAULT.orchestrate", "no", false},
		{"unset", "DEFAULT.orchestrate", "", false}, // not set: no change
		// refused changes
		{"set", "DEFAULT.orchestrate=maybe", `svc.toml:1: DEFAULT.orchestrate: invalid value "maybe"`, true},
		{"set", "app#web.restart=two", `app#web.restart: invalid integer "two"`, true},
		{"set", "DEFAULT.priority+=1", "+= applies to lists only", true},
		{"set", "DEFAULT.bogus=1", "DEFAULT.bogus: unknown keyword", true},
		{"set", "disk#x.dev=1", "want DEFAULT.KEY", true},
		{"add", "fs#new.dev=/dev/sdb1", "fs#new.mnt: required keyword missing", true},
		{"add", "ip#new.ipname=10.0.0.9", "ip#new.ipdev: required keyword missing", true},
		{"set", "app#wbe.start=true", "app#wbe.start: no resource app#wbe in this config (a typo?", true},
		{"unset", "app#nope", "app#nope: no resource app#nope in this config", true},
		{"unset", "disk#x", "want TYPE#NAME (a resource) or a keyword", true},
		{"set", "app#web.start={app.nope.start}", "svc.toml:20: app#web.start: unknown reference", true},
		{"set", "noequal", "want K=V", true},
		{"unset", "ip#vip.ipname", "ip#vip.ipname: required keyword missing", true},
		{"unset", "app#web.nope", "app#web.nope: unknown keyword", true},
		{"get", "app#ghost.start", "no section [app.ghost]", true},
		{"get", "DEFAULT", "DEFAULT.DEFAULT: unknown keyword", true},
		{"get", "DEFAULT.request_cpu", "0", false},
		{"set", "DEFAULT.request_cpu=0.5", "", false},
		{"get", "DEFAULT.request_cpu", "0.5", false},
		{"set", "DEFAULT.request_cpu=250m", "", false},
		{"get", "DEFAULT.request_cpu", "0.25", false},
		{"set", "DEFAULT.request_cpu=-1", "DEFAULT.request_cpu: cpu -1 out of range", true},
		{"set", "DEFAULT.request_mem=1536MiB", "", false},
		{"get", "DEFAULT.request_mem", "1536MiB", false},
		{"set", "DEFAULT.request_mem=2GiB", "", false},
		{"get", "DEFAULT.request_mem", "2GiB", false},
		{"set", "DEFAULT.request_mem=lots", `DEFAULT.request_mem: invalid size "lots"`, true},
	}
	for _, st := range steps {
		var out []byte
		var got string
		var err error
		switch st.op {
		case "get":
			got, err = tomlfile.GetKeyword("web.toml", data, st.kw)
		case "set":
			out, err = tomlfile.SetKeyword("svc.toml", data, st.kw)
		case "add":
			out, err = tomlfile.AddKeyword("svc.toml", data, st.kw)
		case "unset":
			out, err = tomlfile.UnsetKeyword("svc.toml", data, st.kw)
		}
		if st.wantErr {
			if err == nil || !strings.Contains(err.Error(), st.want) {
				t.Errorf("%s %s: error %v, want %q", st.op, st.kw, err, st.want)
			}
			if _, ok := err.(*Error); err != nil && !ok {
				t.Errorf("%s %s: error %T, want *Error", st.op, st.kw, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", st.op, st.kw, err)
			continue
		}
		if st.op == "get" {
			if got != st.want {
				t.Errorf("get %s = %q, want %q", st.kw, got, st.want)
			}
			continue
		}
		if _, err := tomlfile.ParseService("svc.toml", "svc", out); err != nil {
			t.Fatalf("%s %s: result invalid: %v\n%s", st.op, st.kw, err, out)
		}
		data = out
	}
}

func TestSetCanonical(t *testing.T) {
	in := "# comment\n[app.b]\nstart = 'x'\n[ip.a]\nipdev = \"lo\"\nipname = \"::1\"\n[DEFAULT]\npriority = 3\n"
	out, err := tomlfile.SetKeyword("svc.toml", []byte(in), "DEFAULT.orchestrate=ha")
	if err != nil {
		t.Fatal(err)
	}
	want := `[DEFAULT]
orchestrate = "ha"
priority = 3

[ip.a]
ipname = "::1"
ipdev = "lo"

[app.b]
start = "x"
`
	if string(out) != want {
		t.Errorf("SetKeyword =\n%s\nwant\n%s", out, want)
	}
	// Setting the same again is stable.
	again, err := tomlfile.SetKeyword("svc.toml", out, "DEFAULT.orchestrate=ha")
	if err != nil || string(again) != want {
		t.Errorf("second SetKeyword = %q, %v", again, err)
	}
	// Strings that need escapes survive a round trip.
	for _, v := range []string{`sh -c 'echo "a\b"'`, "tab\there", `say "hi"`, `back\slash`} {
		out, err := tomlfile.AddKeyword("svc.toml", []byte(in), "app#b.start="+v)
		if err != nil {
			t.Fatalf("set %q: %v", v, err)
		}
		got, err := tomlfile.GetKeyword("web.toml", out, "app#b.start")
		if err != nil || got != v {
			t.Errorf("round trip of %q: got %q, %v\n%s", v, got, err, out)
		}
	}
}

// A config whose request_cpu is written as a TOML float (request_cpu =
// 0.5, as the docs show it) takes keyword edits: the file is written back
// with the float as a float (any edit, e.g. svcmgr scale, rewrites the
// whole file). Before, every edit of such a file failed with "cannot write
// a value of type float64".
func TestSetKeepsAFloat(t *testing.T) {
	data := []byte("[DEFAULT]\nnodes = [\"n1\", \"n2\"]\norchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = 2\nrequest_cpu = 0.5\nrequest_mem = \"256MiB\"\n\n[app.web]\nstart = \"/bin/true\"\n")
	out, err := tomlfile.SetKeyword("svc.toml", data, "DEFAULT.flex_target=1")
	if err != nil {
		t.Fatalf("set on a config with a float: %v", err)
	}
	if !strings.Contains(string(out), "request_cpu = 0.5\n") {
		t.Fatalf("the float is not written back as it was:\n%s", out)
	}
	if got, err := tomlfile.GetKeyword("svc.toml", out, "DEFAULT.flex_target"); err != nil || got != "1" {
		t.Fatalf("flex_target = %q (%v)", got, err)
	}
	if got, err := tomlfile.GetKeyword("svc.toml", out, "DEFAULT.request_cpu"); err != nil || got != "0.5" {
		t.Fatalf("request_cpu = %q (%v)", got, err)
	}
	whole := []byte(strings.Replace(string(data), "0.5", "2.0", 1))
	out, err = tomlfile.SetKeyword("svc.toml", whole, "DEFAULT.flex_target=1")
	if err != nil || !strings.Contains(string(out), "request_cpu = 2.0\n") {
		t.Fatalf("a whole float stays a float: %v\n%s", err, out)
	}
}
