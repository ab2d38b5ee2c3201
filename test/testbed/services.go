package testbed

import (
	"fmt"
	"strings"
)

// PidApp is an app resource that runs a sleep process and records its pid
// in {var}/main.pid: really started, stopped and checked (monitored).
const PidApp = `[app.main]
start = "sh -c 'sleep 100000 >/dev/null 2>&1 & echo $! > {var}/main.pid'"
stop  = "sh -c 'kill $(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 $(cat {var}/main.pid) 2>/dev/null'"
monitor = true
timeout = "10s"
`

// PidService is a service of PidApp that is not orchestrated.
const PidService = `
[DEFAULT]
orchestrate = "no"

` + PidApp

// HAService is PidService with orchestrate = "ha" on nodes (a TOML list,
// `["n1", "n2"]`), with more [DEFAULT] lines in extra.
func HAService(nodes, extra string) string {
	return strings.Replace(PidService, `orchestrate = "no"`, fmt.Sprintf("orchestrate = \"ha\"\nnodes = %s\n%s", nodes, extra), 1)
}

// NodeList writes names as a TOML list.
func NodeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
