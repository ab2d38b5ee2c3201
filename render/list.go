package render

import (
	"sort"
	"strings"

	"haven/api"
)

// ServiceList renders `svcmgr ls`: one service a line, sorted by name,
// with its avail, overall status and candidate nodes.
func ServiceList(entries []api.ServiceEntry) string {
	if len(entries) == 0 {
		return "no services\n"
	}
	es := append([]api.ServiceEntry(nil), entries...)
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	t := table{gap: 2}
	t.add(c("NAME"), c("AVAIL"), c("OVERALL"), c("NODES"))
	for _, e := range es {
		t.add(c(e.Name), c(orUnknown(e.Avail)), c(orUnknown(e.Overall)), c(orDash(strings.Join(e.Nodes, ","))))
	}
	return t.String()
}
