package resource

import (
	"context"
	"fmt"
	"haven/internal/cmdline"
	"os/exec"
	"slices"
	"sync"
	"time"

	"haven/config"
	"haven/dataset"
)

// app runs the start, stop, check and info commands of an app resource.
type app struct {
	rc  config.ResourceConfig
	env Env

	mu        sync.Mutex
	lastCheck dataset.Status // to log check output only when the result changes
	check     checkCmd       // the check's command line prepared (checkCmd)

	tracked // its cgroup, the process group of its last start
}

// checkLookup is how long a check reuses its command's PATH lookup and
// environment (checkCmd): a new executable put earlier in PATH than the
// one found is used within it, a missing one at once (the check looks it
// up again and retries), a replaced one at once (it runs by its path). It
// spans many checks at the default check_interval (a minute; when it was
// a minute too, every check at that interval looked its program up again:
// 4 stats with systemd's PATH, a third of the daemon's own cost of a
// check; docs/benchmarks.md).
const checkLookup = 10 * time.Minute

// checkCmd is the check's command, prepared for the next checks: checks
// run every monitor_interval, and splitting the command line, looking its
// program up in PATH (a stat per PATH directory) and building the
// environment each time were most of the daemon's own cost of a check
// (docs/benchmarks-archive.md, "Cost of a check").
type checkCmd struct {
	at   time.Time // zero: not prepared
	argv []string
	path string   // argv[0] found in PATH
	env  []string // BaseEnv and the HAVEN_ variables, without a fencing token
	// envOnce tells that env has each variable once: a check does not
	// look again until the next lookup (checkLookup).
	envOnce bool
}

func newApp(rc config.ResourceConfig, env Env) (*app, error) {
	for _, c := range []struct{ key, cmdline string }{
		{"start", rc.Start}, {"stop", rc.Stop}, {"check", rc.Check}, {"info", rc.Info},
	} {
		if _, err := cmdline.Split(c.cmdline); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", rc.RID, c.key, err)
		}
	}
	return &app{rc: rc, env: env, tracked: tracked{cg: newLeaf(env.Cgroup, rc.RID)}}, nil
}

func (a *app) RID() string { return a.rc.RID }

// Label is the start command, or the check command when there is no
// start command, whole: the status tree shortens it for the eye, the JSON
// keeps it as it is.
func (a *app) Label() string {
	s := a.rc.Start
	if s == "" {
		s = a.rc.Check
	}
	if s == "" {
		return "no command"
	}
	return s
}

// command prepares one run of an action's command line (with the
// fencing token ctx carries, WithFencingToken).
func (a *app) command(ctx context.Context, action, cmdline string) command {
	env := append(BaseEnv(),
		"HAVEN_SVCNAME="+a.env.Service,
		"HAVEN_NODENAME="+a.env.Node,
		"HAVEN_RID="+a.rc.RID,
		"HAVEN_ACTION="+action,
	)
	env = append(env, fencingEnv(ctx)...)
	return command{
		cmdline: cmdline,
		action:  action,
		timeout: a.rc.Timeout,
		env:     env,
		dir:     a.env.VarDir,
		keep:    20,
		cgroup:  a.cg,
	}
}

// act runs the start or stop command with its output logged line by line.
func (a *app) act(ctx context.Context, action, cmdline string) error {
	if cmdline == "" {
		return nil // nothing to do
	}
	a.env.Log(a.rc.RID, action+": "+cmdline)
	c := a.command(ctx, action, cmdline)
	c.live = func(line string) { a.env.Log(a.rc.RID, line) }
	res, err := run(ctx, c)
	if action == "start" {
		a.started(res.pid)
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", a.rc.RID, action, err)
	}
	if res.code != 0 {
		return fmt.Errorf("%s: %s failed: %s", a.rc.RID, action, res.describe())
	}
	return nil
}

// Start runs the start command. A start command that leaves a daemon
// running in the background returns when the command itself exits; the
// daemon is left alone.
func (a *app) Start(ctx context.Context) error { return a.act(ctx, "start", a.rc.Start) }

// Stop runs the stop command; without one there is nothing to do.
func (a *app) Stop(ctx context.Context) error { return a.act(ctx, "stop", a.rc.Stop) }

// Status runs the check command: exit 0 is up, 1 is down, anything else
// (another code, a signal, a timeout, a command that cannot run) is warn.
// Without a check command the status is n/a. The reason is the last output
// line of the check, or how it ended.
//
// Checks run often, so their output is not logged every time: only when the
// result differs from the previous check's.
func (a *app) Status(ctx context.Context) (dataset.Status, string) {
	if a.rc.Check == "" {
		return dataset.StatusNA, ""
	}
	c, cached := a.checkCommand(ctx, false)
	res, err := run(ctx, c)
	if err != nil && cached {
		// the program moved or went since the lookup: look it up again
		c, _ = a.checkCommand(ctx, true)
		res, err = run(ctx, c)
	}
	var st dataset.Status
	var reason string
	switch {
	case err != nil:
		st, reason = dataset.StatusWarn, "check: "+err.Error()
	case res.code == 0:
		st, reason = dataset.StatusUp, res.last()
	case res.code == 1:
		st, reason = dataset.StatusDown, res.last()
	default:
		st, reason = dataset.StatusWarn, "check "+res.describe()
	}
	a.mu.Lock()
	changed := st != a.lastCheck
	a.lastCheck = st
	a.mu.Unlock()
	if changed {
		for _, l := range res.lines {
			a.env.Log(a.rc.RID, l)
		}
	}
	return st, reason
}

// checkCommand is the command of a check: prepared once per checkLookup
// (again when fresh is set). cached tells whether it came from an earlier
// lookup. A program not found is not kept: run reports it.
func (a *app) checkCommand(ctx context.Context, fresh bool) (c command, cached bool) {
	now := time.Now()
	a.mu.Lock()
	p := a.check
	a.mu.Unlock()
	cached = !p.at.IsZero() && !fresh && now.Sub(p.at) < checkLookup && now.After(p.at)
	if !cached {
		base := a.command(context.Background(), "check", a.rc.Check)
		p = checkCmd{env: base.env}
		if argv, err := cmdline.Split(a.rc.Check); err == nil && len(argv) > 0 {
			if path, err := exec.LookPath(argv[0]); err == nil {
				p.at, p.argv, p.path = now, argv, path
			}
		}
		if env, err := dedupEnv(p.env); err == nil {
			p.env, p.envOnce = env, true
		}
		a.mu.Lock()
		a.check = p
		a.mu.Unlock()
	}
	c = command{cmdline: a.rc.Check, action: "check", timeout: a.rc.Timeout, env: p.env, dir: a.env.VarDir, keep: 20,
		argv: p.argv, path: p.path, envOnce: p.envOnce, cgroup: a.cg}
	if f := fencingEnv(ctx); len(f) > 0 {
		c.env = append(slices.Clip(p.env), f...)
		c.envOnce = false // the token may stand twice
	}
	return c, cached
}

// Info runs the info command and returns its output lines (at most the
// last 1000). Without an info command it returns nothing.
func (a *app) Info(ctx context.Context) ([]string, error) {
	if a.rc.Info == "" {
		return nil, nil
	}
	c := a.command(ctx, "info", a.rc.Info)
	c.keep = 1000
	res, err := run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%s: info: %w", a.rc.RID, err)
	}
	if res.code != 0 {
		return res.lines, fmt.Errorf("%s: info failed: %s", a.rc.RID, res.describe())
	}
	return res.lines, nil
}

// timeoutOf returns the action timeout of a resource config.
func timeoutOf(rc config.ResourceConfig) time.Duration {
	if rc.Timeout > 0 {
		return rc.Timeout
	}
	return defaultTimeout
}
