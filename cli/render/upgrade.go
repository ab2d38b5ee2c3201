package render

import (
	"strconv"

	"haven/dataset"
)

// upgrading reports whether some node reads formats other than the
// cluster feature level: a rolling upgrade is under way (or was left
// half-done), and svcmon shows each node's format version.
func upgrading(st *dataset.ClusterStatus) bool {
	if st.Cluster.FeatureLevel == 0 {
		return false // a producer that does not say
	}
	for _, ni := range st.Nodes {
		if ni.Format != 0 && ni.Format != st.Cluster.FeatureLevel {
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
