package render

import (
	"sort"
	"strings"

	"haven/api"
)

// ServiceList renders `svcmgr ls`: one service a line, sorted by name,
// with its avail, overall status and candidate nodes, and a NOTES column
// when a config does not parse.
func ServiceList(entries []api.ServiceEntry) string {
	cleanAll(entries) // peers' text, made inert (Clean)
	if len(entries) == 0 {
		return "no services\n"
	}
	es := append([]api.ServiceEntry(nil), entries...)
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	notes := false
	for _, e := range es {
		notes = notes || e.ConfigError != ""
	}
	t := table{gap: 2}
	head := []cell{c("NAME"), c("AVAIL"), c("OVERALL"), c("NODES")}
	if notes {
		head = append(head, c("NOTES"))
	}
	t.add(head...)
	for _, e := range es {
		row := []cell{c(e.Name), c(orUnknown(e.Avail)), c(orUnknown(e.Overall)), c(orDash(strings.Join(e.Nodes, ",")))}
		if e.ConfigError != "" {
			row = append(row, c("config invalid: "+e.ConfigError))
		}
		t.add(row...)
	}
	return t.String()
}
