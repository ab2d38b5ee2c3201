// Package vocab is the vocabulary of the node core: the words every part
// of it and every driver of it name, with no rule of their own. The
// orders of a Ready to the driver (Action, Check, Probe, Fence,
// NodeAction, ConfigOp), the answers (Ticket, Answer), the durable state
// (State), and the Event interface with its Level. Package node and its
// sub-machines build on it; package node gives each word its name there
// too (node.Ready is vocab.Ready), so a driver sees one package.
package vocab

// Level is how loud an event is in the node log.
type Level int

const (
	Info Level = iota
	Warn
	Error
)

// Event is one typed event of the core. The daemon writes each to
// node.log (zap, with the event's fields) and to the events stream
// (`nodemgr events`); the simulation's timeline is made of them.
type Event interface {
	// Kind names the event's type in the events stream ("target", ...).
	Kind() string
	// Service is the service it is about, "" for the node.
	Service() string
	// Level is its loudness in the log.
	Level() Level
	// String is its one-line text, for the log and `nodemgr events`.
	String() string
}
