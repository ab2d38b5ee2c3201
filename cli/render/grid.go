package render

import (
	"strings"

	"haven/dataset"
)

// Grid is the svcmon view as data, for the web view (cli/web): the
// same sections, marks, colours and notes as the terminal grid, built by
// the same functions, so that the two never disagree.
type Grid struct {
	Cluster string
	// Local is the node that produced the status ("seen from").
	Local string
	// Header are the lines above the grid as svcmon prints them: the
	// cluster with its quorum, the arbitrators, the last vote, the
	// takeover gates, a compat warning.
	Header []string
	// Nodes are the columns, by name.
	Nodes    []string
	Sections []GridSection
}

// GridSection is one block of the grid: Heartbeat (when the status has
// it), Nodes, Services.
type GridSection struct {
	Title string
	Rows  []GridRow
	// Notes are the full-width lines below the block (why a node is frozen).
	Notes []string
}

// GridRow is a line of a block: its left cells (the row's name, and for
// a service its avail, orchestrate and notes), then a cell per node.
type GridRow struct {
	// Service is the service of a Services row, "" in the other blocks.
	Service string
	Left    []GridCell
	Cells   []GridCell
}

// GridCell is a piece of text and its tone: "ok", "bad", "warn", "muted",
// "info" or "" (svcmon's green, red, yellow, grey, blue, none).
type GridCell struct {
	Text string
	Tone string
}

// SvcmonGrid builds the Grid of st. st's strings are made inert as for
// Svcmon (Clean); the caller escapes them for its medium (html/template).
func SvcmonGrid(st *dataset.ClusterStatus, sel func(name string) bool) Grid {
	if st == nil {
		return Grid{}
	}
	cleanAll(st)
	nodes := clusterNodes(st)
	g := Grid{Cluster: st.Cluster.Name, Local: st.Local, Nodes: nodes}
	for _, l := range strings.Split(strings.TrimRight(svcmonHeader(st, false), "\n"), "\n") {
		g.Header = append(g.Header, strings.TrimSpace(l))
	}
	var secs []monSection
	if len(st.Heartbeat) > 0 {
		secs = append(secs, heartbeatSection(st, nodes))
	}
	secs = append(secs, nodesSection(st, nodes), servicesSection(st, nodes, sel))
	for _, s := range secs {
		gs := GridSection{Title: s.title, Notes: s.notes}
		for _, r := range s.rows {
			row := GridRow{Left: gridCells(r.left), Cells: gridCells(r.nodes)}
			if s.title == "Services" && len(r.left) > 0 {
				row.Service = r.left[0].text
			}
			gs.Rows = append(gs.Rows, row)
		}
		g.Sections = append(g.Sections, gs)
	}
	return g
}

func gridCells(cs []cell) []GridCell {
	out := make([]GridCell, len(cs))
	for i, x := range cs {
		out[i] = GridCell{Text: x.text, Tone: tone(x.color)}
	}
	return out
}

// tone names an ANSI colour of the grid for a style sheet.
func tone(color string) string {
	switch color {
	case ansiGreen:
		return "ok"
	case ansiRed:
		return "bad"
	case ansiYellow:
		return "warn"
	case ansiGrey:
		return "muted"
	case ansiBlue:
		return "info"
	}
	return ""
}
