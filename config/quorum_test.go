package config_test

import (
	"testing"
	"time"

	"haven/config/tomlfile"
)

// The quorum keywords act now: they load, with their values.
func TestQuorumKeywordsLoad(t *testing.T) {
	n, err := tomlfile.ParseNode("node.toml", []byte("[node]\nsplit_action = \"stop\"\n"))
	if err != nil || n.SplitAction != "stop" {
		t.Fatalf("split_action stop: %v, %+v", err, n)
	}
	data := "[cluster]\nquorum = true\ninsecure_no_secret = true\n[nodes]\nn1 = \"10.0.0.1:10000\"\nn2 = \"10.0.0.2:10000\"\n" +
		"[arbitrator.web]\nuri = \"http://10.0.0.9:8080/ok\"\ntimeout = \"2s\"\nweight = 2\n" +
		"[stonith.n2]\ncommand = \"ipmitool -H n2-ipmi power off\"\ntimeout = \"10s\"\n"
	c, err := tomlfile.ParseCluster("cluster.toml", []byte(data), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Quorum || len(c.Arbitrators) != 1 || c.Arbitrators[0].Weight != 2 || c.Arbitrators[0].Timeout != 2*time.Second {
		t.Fatalf("quorum and arbitrator: %+v", c)
	}
	st, ok := c.Stonith["n2"]
	if !ok || st.Command != "ipmitool -H n2-ipmi power off" || st.Timeout != 10*time.Second || st.Node != "n2" {
		t.Fatalf("stonith: %+v", c.Stonith)
	}
}
