package svcmgr

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/internal/termtext"
)

// LogEntry is one line of a service log, as `logs --format json` prints it
// (one object a line).
type LogEntry struct {
	Time    string `json:"time"` // as written by the daemon, RFC 3339 with milliseconds
	Node    string `json:"node"`
	Service string `json:"svc"`
	RID     string `json:"rid"` // "" for the daemon's own lines about the service
	Message string `json:"message"`
}

// ParseLogLine reads a line of R/log/services/NAME.log, written by the
// daemon as "TIME RID MESSAGE" (RID "-" for its own lines). A line of
// another form (the rest of a multi-line message) is all message.
func ParseLogLine(node, svc, line string) LogEntry {
	e := LogEntry{Node: node, Service: svc, Message: line}
	ts, rest, ok := strings.Cut(line, " ")
	if !ok {
		return e
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return e
	}
	rid, msg, _ := strings.Cut(rest, " ")
	if rid == "-" {
		rid = ""
	}
	e.Time, e.RID, e.Message = ts, rid, msg
	return e
}

func logs(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	// the lines are this node's log of the service, or --node's (a bad
	// line is refused before the daemon is asked anything)
	node := c.String("node")
	if node != "" && c.Bool("follow") {
		return cliutil.Usage("--follow reads this node's log only; --node %s without --follow prints its last lines", node)
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return cliutil.Usage("logs takes one service, %d selected", len(names))
	}
	name := names[0]
	if asJSON && node == "" {
		ds, err := cl.DaemonStatus(ctx(c))
		if err != nil {
			return err
		}
		node = ds.Node
	}
	emit := func(line string) error {
		if asJSON {
			return cliutil.PrintJSONLine(c.App.Writer, ParseLogLine(node, name, line))
		}
		// peers' and commands' text: control characters made visible
		_, err := fmt.Fprintln(c.App.Writer, termtext.CleanText(line))
		return err
	}
	if !c.Bool("follow") {
		out, err := cl.Logs(ctx(c), node, name, c.Int("lines"))
		if err != nil || out == "" {
			return err
		}
		if !asJSON {
			_, err := fmt.Fprint(c.App.Writer, termtext.CleanText(out))
			return err
		}
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if err := emit(line); err != nil {
				return err
			}
		}
		return nil
	}
	q := map[string][]string{"name": {name}, "lines": {fmt.Sprint(c.Int("lines"))}, "follow": {"1"}}
	return cl.Stream(ctx(c), api.PathLogs, q, func(line []byte) error { return emit(string(line)) })
}
