package nodemgr

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"haven/cli/cliutil"
	"haven/guard"
)

// guardCommand is `nodemgr guard`: the node guard (package guard), which
// the daemon starts; `status` asks it on this node.
func guardCommand() *cli.Command {
	return &cli.Command{Name: "guard", Usage: "the node guard, which ends the failover services when the daemon's lease runs out: status",
		Subcommands: []*cli.Command{
			{Name: "run", Hidden: true, Usage: "run the guard (the daemon starts it)", Action: guardRun},
			{Name: "status", Usage: "the guard's state: armed, lease left, the last time it acted (--format json)", Action: guardStatus},
		}}
}

// guardRun is the guard's process: one processor, its memory locked, the
// last the OOM killer picks; SIGTERM and SIGINT stop it (a host going
// down), SIGHUP is ignored.
func guardRun(c *cli.Context) error {
	p := cliutil.Paths(c)
	runtime.GOMAXPROCS(1)
	lg := log.New(os.Stderr, "guard: ", log.LstdFlags|log.Lmicroseconds)
	if err := lockMemory(); err != nil {
		lg.Printf("lock the guard's memory: %v: it may be paged out", err)
	}
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0); err != nil {
		lg.Printf("oom_score_adj: %v", err)
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, dir := range []string{p.Run, p.Var} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	err := guard.Run(ctx, guard.Config{Socket: p.GuardSocket(), Lock: p.GuardLock(), Record: p.GuardRecord(), Log: lg})
	if errors.Is(err, guard.ErrRunning) {
		return cliutil.Failed("%v", err)
	}
	return err
}

func guardStatus(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	p := cliutil.Paths(c)
	cl := guard.NewClient(p.GuardSocket(), 2*time.Second)
	defer cl.Close()
	rep, err := cl.Do(guard.Request{Op: guard.OpStatus})
	if err != nil {
		rec, _ := guard.ReadRecord(p.GuardRecord())
		if asJSON {
			cliutil.PrintJSON(c.App.Writer, struct {
				Running bool          `json:"running"`
				Fired   *guard.Record `json:"fired,omitempty"`
			}{false, rec})
		} else {
			fmt.Fprintf(c.App.Writer, "guard: not running (no answer on %s)\n", p.GuardSocket())
			printRecord(c.App.Writer, rec)
		}
		return cliutil.Failed("the guard is not running")
	}
	if asJSON {
		return cliutil.PrintJSON(c.App.Writer, rep)
	}
	state := "disarmed: it ends nothing"
	if rep.Armed {
		state = fmt.Sprintf("armed: lease left %s, %d failover instances in its kill set", time.Duration(rep.Left).Round(time.Millisecond), rep.Targets)
	}
	fmt.Fprintf(c.App.Writer, "guard: pid %d, %s\n", rep.Pid, state)
	printRecord(c.App.Writer, rep.Fired)
	return nil
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

// lockMemory keeps the guard in memory, so that it needs no disk to act
// (a hung disk, a host under memory pressure): every page it touches is
// locked as it comes (MCL_ONFAULT: the runtime's reserved heap is not
// faulted in whole, 150 MB instead of 16), and its program's pages are
// faulted in and locked at once (the code that acts runs once, late).
func lockMemory() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
		return fmt.Errorf("mlockall: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[5] != exe {
			continue
		}
		var start, end uintptr
		if _, err := fmt.Sscanf(f[0], "%x-%x", &start, &end); err != nil || end <= start {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MLOCK, start, end-start, 0); e != 0 {
			return fmt.Errorf("mlock %s: %w", f[0], e)
		}
	}
	return nil
}
