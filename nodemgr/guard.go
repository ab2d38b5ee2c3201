package nodemgr

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/guard"
)

// guardCommand is `nodemgr guard`: the node guard (package guard), which
// the daemon starts; `status` asks it on this node.
func guardCommand() *cli.Command {
	return &cli.Command{Name: "guard", Usage: "the node guard, which ends the failover services when the daemon's lease runs out: status",
		Subcommands: []*cli.Command{
			{Name: "status", Usage: "the guard's state: armed, lease left, the last time it acted (--format json)", Action: guardStatus},
		}}
}

func guardStatus(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	p := cliutil.Paths(c)
	// the program a daemon started from this nodemgr runs: missing, no
	// guard could be started again
	_, progErr := guard.Program("")
	cl := guard.NewClient(p.GuardSocket(), 2*time.Second)
	defer cl.Close()
	rep, err := cl.Do(guard.Request{Op: guard.OpStatus})
	if err != nil {
		rec, _ := guard.ReadRecord(p.GuardRecord())
		if asJSON {
			cliutil.PrintJSON(c.App.Writer, struct {
				Running bool          `json:"running"`
				Fired   *guard.Record `json:"fired,omitempty"`
				Error   string        `json:"error,omitempty"`
			}{false, rec, errString(progErr)})
		} else {
			fmt.Fprintf(c.App.Writer, "guard: not running (no answer on %s)\n", p.GuardSocket())
			printRecord(c.App.Writer, rec)
		}
		if progErr != nil {
			return cliutil.Failed("the guard is not running, and the daemon cannot start one: %v", progErr)
		}
		return cliutil.Failed("the guard is not running")
	}
	if asJSON {
		if err := cliutil.PrintJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		state := "disarmed: it ends nothing"
		if rep.Armed {
			state = fmt.Sprintf("armed: lease left %s, %d failover instances in its kill set", time.Duration(rep.Left).Round(time.Millisecond), rep.Targets)
		}
		// the program it runs: haven-guard, or the nodemgr of an earlier
		// release (until the node's next shutdown or reboot)
		prog, _ := os.Readlink("/proc/" + strconv.Itoa(rep.Pid) + "/exe")
		if prog != "" {
			prog = " (" + prog + ")"
		}
		fmt.Fprintf(c.App.Writer, "guard: pid %d%s, %s\n", rep.Pid, prog, state)
		printRecord(c.App.Writer, rep.Fired)
	}
	if progErr != nil {
		return cliutil.Failed("the guard runs, but a daemon of this nodemgr could not start another: %v", progErr)
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func printRecord(w io.Writer, rec *guard.Record) {
	if rec == nil {
		fmt.Fprintln(w, "last fired: never")
		return
	}
	ack := "taken in by the daemon"
	if !rec.Acked {
		ack = "NOT yet taken in by a daemon"
	}
	fmt.Fprintf(w, "last fired: %s (%s after the lease's end, took %s; %s)\n", rec.At.Local().Format(time.RFC3339),
		rec.Late.Round(time.Millisecond), rec.Took.Round(time.Millisecond), ack)
	for _, e := range rec.Ended {
		fmt.Fprintf(w, "  %s\n", e)
	}
}
