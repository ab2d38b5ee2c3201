package render

import (
	"strings"
	"unicode/utf8"
)

// ANSI colour codes. They are applied after padding so that they never
// count in a column's width.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBlue   = "\x1b[34m"
	ansiGrey   = "\x1b[90m"
)

// cell is one piece of text with an optional colour.
type cell struct {
	text  string
	color string
}

func c(text string) cell         { return cell{text: text} }
func cc(text, color string) cell { return cell{text: text, color: color} }
func width(s string) int         { return utf8.RuneCountInString(s) }
func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-width(s))) }
func paint(s, color string, on bool) string {
	if !on || color == "" || s == "" {
		return s
	}
	return color + s + ansiReset
}

// table lays out rows of cells in columns separated by gap spaces.
// Trailing blanks of every line are trimmed.
type table struct {
	rows  [][]cell
	gap   int
	color bool
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

// widths returns the width of every column.
func (t *table) widths() []int {
	var w []int
	for _, r := range t.rows {
		for i, x := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], width(x.text))
		}
	}
	return w
}

func (t *table) String() string {
	w := t.widths()
	var b strings.Builder
	for _, r := range t.rows {
		b.WriteString(joinCells(r, w, t.gap, t.color))
		b.WriteByte('\n')
	}
	return b.String()
}

// joinCells pads every cell but the last to its column width, colours it,
// and trims the trailing blanks of the line.
func joinCells(r []cell, w []int, gap int, color bool) string {
	var b strings.Builder
	for i, x := range r {
		s := x.text
		if i < len(r)-1 {
			s = pad(s, w[i]+gap)
			// Colour the text only, not its padding.
			s = paint(x.text, x.color, color) + s[len(x.text):]
		} else {
			s = paint(s, x.color, color)
		}
		b.WriteString(s)
	}
	return strings.TrimRight(b.String(), " ")
}
