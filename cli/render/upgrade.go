package render

import (
	"strconv"

	"haven/dataset"
)

// upgrading reports whether the nodes known read different format
// versions: a rolling upgrade is under way (or was left half-done), and
// svcmon shows each node's format version. A node not heard yet (format
// 0) says nothing: on a fresh cluster the feature level stays below what
// this node reads until every member was heard, which is no upgrade.
func upgrading(st *dataset.ClusterStatus) bool {
	if st.Cluster.FeatureLevel == 0 {
		return false // a producer that does not say
	}
	seen := 0
	for _, ni := range st.Nodes {
		switch {
		case ni.Format == 0:
		case seen == 0:
			seen = ni.Format
		case ni.Format != seen:
			return true
		}
	}
	return false
}

// formatRow is the newest format version each node reads.
func formatRow(st *dataset.ClusterStatus, nodes []string) monRow {
	r := monRow{left: []cell{c("format")}}
	for _, n := range nodes {
		ni, ok := st.Nodes[n]
		if !ok || ni.Format == 0 {
			r.nodes = append(r.nodes, c("-"))
			continue
		}
		r.nodes = append(r.nodes, c(strconv.Itoa(ni.Format)))
	}
	return r
}
