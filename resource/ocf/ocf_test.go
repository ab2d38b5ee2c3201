package ocf

import (
	"strings"
	"testing"
	"time"
)

const sample = `<?xml version="1.0"?>
<!DOCTYPE resource-agent SYSTEM "ra-api-1.dtd">
<resource-agent name="x" version="1.2">
<version>1.0</version>
<longdesc lang="en">Long &amp; &nbsp;winding.</longdesc>
<shortdesc lang="en">Short</shortdesc>
<parameters>
<parameter name="ip" unique="1" required="1"><shortdesc lang="en">An address</shortdesc><content type="string" default=""/></parameter>
<parameter name="mode" required="true"><longdesc lang="en">
First line of mode.
More.
</longdesc><content type="select"><option value="a"/><option value="b"/></content></parameter>
<parameter name="opt"><shortdesc lang="en">Optional</shortdesc><content type="integer" default="3"/></parameter>
</parameters>
<actions>
<action name="start" timeout="20s"/>
<action name="stop" timeout="2min"/>
<action name="monitor" timeout="30" interval="10s" depth="0"/>
<action name="monitor" timeout="60s" interval="11s" depth="0" role="Promoted"/>
<action name="validate-all" timeout="500ms"/>
</actions>
</resource-agent>
`

func TestParseMetadataAndCheckParams(t *testing.T) {
	m, err := ParseMetadata([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "x" || m.Version != "1.2" || len(m.Parameters) != 3 || !strings.Contains(m.LongDesc, "Long & ") {
		t.Fatalf("%+v", m)
	}
	for action, want := range map[string]time.Duration{"start": 20 * time.Second, "stop": 2 * time.Minute, "monitor": 30 * time.Second, "validate-all": 500 * time.Millisecond, "reload": 0} {
		if got := m.Timeout(action); got != want {
			t.Errorf("%s timeout %s, want %s", action, got, want)
		}
	}
	errs := m.CheckParams("ocf:h:x", map[string]string{"ip": "1.2.3.4", "bogus": "1"})
	if len(errs) != 2 || errs[0].Key != "params.bogus" || errs[1].Key != "params" ||
		!strings.Contains(errs[0].Msg, "ip (required) [An address], mode (required), opt [Optional]") ||
		errs[1].Msg != `ocf:h:x needs parameter "mode": First line of mode.` {
		t.Fatalf("%+v", errs)
	}
	if errs := m.CheckParams("ocf:h:x", map[string]string{"ip": "1", "mode": "a"}); len(errs) != 0 {
		t.Fatalf("%+v", errs)
	}
	for _, bad := range []string{"", "not xml", "<other/>", "<resource-agent><parameters><parameter/></parameters></resource-agent>"} {
		if _, err := ParseMetadata([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"20": 20 * time.Second, "20s": 20 * time.Second, " 90 sec": 90 * time.Second,
		"2min": 2 * time.Minute, "1m": time.Minute, "1h": time.Hour, "500ms": 500 * time.Millisecond, "1.5s": 1500 * time.Millisecond} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %s %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "s", "-1", "20 fortnights", "9999999999h"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The environment drops the OCF and HA variables the daemon inherited:
// an agent sees only Haven's.
func TestEnvironDropsInheritedOCF(t *testing.T) {
	e := Env{Agent: Agent{Root: "/r", Provider: "p", Type: "t"}, Instance: "web-x", Params: map[string]string{"b": "2", "a": "1"}, Timeout: 20 * time.Second}
	env := e.Environ([]string{"PATH=/bin", "OCF_RESKEY_a=evil", "HA_RSCTMP=/evil", "__OCF_ACTION=x"})
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "evil") || strings.Contains(joined, "__OCF_ACTION") || !strings.Contains(joined, "PATH=/bin") {
		t.Fatalf("%v", env)
	}
	if !strings.Contains(joined, "OCF_RESKEY_a=1\nOCF_RESKEY_b=2") || !strings.Contains(joined, "OCF_RESKEY_CRM_meta_timeout=20000") || !strings.Contains(joined, "HA_RSCTMP=/run/resource-agents") {
		t.Fatalf("%v", env)
	}
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("<resource-agent><actions><action name='start' timeout='9999999999999999h'/></actions></resource-agent>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadata(data)
		if err != nil {
			return
		}
		m.Timeout("start")
		m.CheckParams("a", map[string]string{"x": "1"})
		var b strings.Builder
		m.Describe(&b, Agent{Provider: "p", Type: "t"})
	})
}
