// Package constraints compiles and evaluates the placement constraints of a
// service (DEFAULT.constraints): expr-lang expressions over a node's
// environment, in the expr form or the OpenSVC $(...) form. Pure: programs
// are compiled once at config load and evaluated against plain data.
package constraints
