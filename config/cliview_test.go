package config_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "haven/config"
	"haven/config/tomlfile"
)

const viewConf = `[DEFAULT]
nodes = ["n1", "n2"]
orchestrate = "ha"

[app.main]
start = "sh -c 'echo start'"
timeout = "30s"
restart = 0
monitor = true

[ip.vip]
ipname = "192.168.10.50"
ipdev = "eth0"
`

// get --kw of an unknown keyword names the file the keyword was looked
// up in, as set and unset do.
func TestGetKeywordErrorNamesTheFile(t *testing.T) {
	_, err := tomlfile.GetKeyword("/etc/haven/services/web.toml", []byte(viewConf), "app#main.timout")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a config.Error", err)
	}
	if !strings.HasPrefix(err.Error(), "/etc/haven/services/web.toml: app#main.timout: unknown keyword") {
		t.Fatalf("got %q, want it to start with the file, the key and the cause", err)
	}
	_, err = tomlfile.GetKeyword("/etc/haven/services/web.toml", []byte(viewConf), "app#nope.timeout")
	if err == nil || !strings.HasPrefix(err.Error(), "/etc/haven/services/web.toml: app#nope.timeout: no section") {
		t.Fatalf("got %v, want the file named", err)
	}
}

func TestServiceSectionsAsWritten(t *testing.T) {
	got, err := tomlfile.ServiceSections("web.toml", []byte(viewConf))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"DEFAULT":{"nodes":["n1","n2"],"orchestrate":"ha"},"app#main":{"monitor":true,"restart":0,"start":"sh -c 'echo start'","timeout":"30s"},"ip#vip":{"ipdev":"eth0","ipname":"192.168.10.50"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	_, err = tomlfile.ServiceSections("web.toml", []byte("[DEFAULT]\norchestrat = \"ha\"\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "web.toml:2: DEFAULT.orchestrat: unknown keyword") {
		t.Fatalf("got %v, want file:line: key: unknown keyword", err)
	}
}
