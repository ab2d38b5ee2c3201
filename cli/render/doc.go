// Package render turns Haven's status values into the text sysadmins read:
// the svcmon cluster view, the `svcmgr print status` tree, `nodemgr print
// status` / `nodemgr daemon status`, and `svcmgr ls`.
//
// Every function here is pure: it takes plain values (and `now` where an age
// is shown), reads no clock, does no IO and returns a string ending with a
// newline. Each view first passes every string of what it is given through
// termtext.Clean, in place: text that peers provide (frozen reasons, labels,
// messages, names) reaches the terminal with its control characters made
// visible, never acted on. Layouts follow OpenSVC's so that its users feel at home:
//
//	Services                 n1          n2        n3
//	 web       up     ha   | O^          X ready   -
//
// Columns are aligned from the widths of their cells. ANSI colours are off
// unless asked for, and never change the widths.
package render
