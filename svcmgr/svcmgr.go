package svcmgr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cliutil"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/render"
	"haven/version"
)

// App returns the svcmgr command.
func App() *cli.App {
	flags := append(cliutil.GlobalFlags(),
		&cli.StringFlag{Name: "service", Aliases: []string{"s"}, Usage: "`SELECTOR`: a service name, a comma list or a glob"},
		&cli.BoolFlag{Name: "local", Usage: "act on this node's instance only, without orchestration"},
		&cli.StringFlag{Name: "node", Usage: "clear: the node whose failed state to reset"},
		&cli.StringFlag{Name: "to", Usage: "switch: the destination node"},
		&cli.BoolFlag{Name: "wait", Usage: "return when the target is reached"},
		&cli.DurationFlag{Name: "time", Value: 5 * time.Minute, Usage: "bound of --wait"},
		&cli.StringFlag{Name: "config", Usage: "create / validate: the config `FILE`"},
		&cli.BoolFlag{Name: "replace", Usage: "create: replace the config of an existing service (e.g. one whose config is invalid)"},
		&cli.StringSliceFlag{Name: "kw", Usage: "set / get / unset: a keyword `K=V` (set) or `K` (get, unset); repeatable"},
		&cli.BoolFlag{Name: "follow", Usage: "logs: keep printing new lines"},
		&cli.IntFlag{Name: "lines", Value: 100, Usage: "logs: how many past lines"},
		&cli.BoolFlag{Name: "start", Usage: "explain: what a start now would do, as if the service were down everywhere"},
	)
	action := func(name string) *cli.Command {
		return &cli.Command{Name: name, Usage: actionUsage[name], UsageText: "svcmgr -s SELECTOR " + name + " [--local] [--wait [--time 5m]]" + actionExtra[name],
			Description: flagsAnywhere, Action: func(c *cli.Context) error { return serviceAction(c, name) }}
	}
	return &cli.App{
		// --version prints the release, commit, Go and compat versions; the
		// shell completions call the tool with --generate-bash-completion
		Version:              version.String(),
		EnableBashCompletion: true,

		Name:      "svcmgr",
		Usage:     "manage Haven services",
		UsageText: "svcmgr -s SELECTOR ACTION [flags]\n   svcmgr validate --config FILE",
		Flags:     flags,
		Commands: []*cli.Command{
			{Name: "create", Usage: "install a service config (--config FILE; name from -s or the file name; --replace: of an existing service)", Action: create},
			action("delete"),
			action("start"), action("stop"), action("freeze"), action("thaw"),
			action("clear"), action("abort"), action("takeover"), action("giveback"), action("switch"),
			{Name: "ls", Usage: "list services", Action: ls},
			{Name: "print", Usage: "print status | print config", Subcommands: []*cli.Command{
				{Name: "status", Usage: "the service's status tree (--format json: the status object)", Action: printStatus},
				{Name: "config", Usage: "the installed config", Action: printConfig},
			}},
			{Name: "json", Usage: "json status", Subcommands: []*cli.Command{
				{Name: "status", Usage: "alias of print status --format json", Action: func(c *cli.Context) error {
					c.Set("format", "json")
					return printStatus(c)
				}},
			}},
			{Name: "validate", Usage: "validate --config FILE (no daemon needed) | validate config", Action: validateFile,
				Subcommands: []*cli.Command{{Name: "config", Usage: "check the installed config", Action: validateInstalled}}},
			{Name: "edit", Usage: "edit config", Subcommands: []*cli.Command{
				{Name: "config", Usage: "edit the config in $EDITOR, validate, install", Action: editConfig},
			}},
			{Name: "set", Usage: "set --kw K=V (also K+=V, K-=V for lists)", Action: func(c *cli.Context) error { return keyword(c, "set") }},
			{Name: "get", Usage: "get --kw K", Action: func(c *cli.Context) error { return keyword(c, "get") }},
			{Name: "unset", Usage: "unset --kw K", Action: func(c *cli.Context) error { return keyword(c, "unset") }},
			{Name: "logs", Usage: "the service's log lines (--follow, --lines N)", Action: logs},
			{Name: "explain", Usage: "why the service runs (or not) where it does: every node's verdict, the leader, the local monitor (--start: for a start now; --format json)",
				UsageText: "svcmgr -s SELECTOR explain [--start] [--format json]", Description: flagsAnywhere, Action: explain},
		},
	}
}

// flagsAnywhere is said in every command's help: the flags are the app's,
// accepted anywhere on the line.
const flagsAnywhere = "Every flag listed by `svcmgr --help` may stand anywhere on the line."

var actionExtra = map[string]string{"switch": " --to NODE", "clear": " [--node NODE]"}

var actionUsage = map[string]string{
	"delete":   "stop the service everywhere and remove its config",
	"start":    "start (orchestrated; --local: this node's instance directly)",
	"stop":     "stop and freeze (orchestrated; --local: this node's instance directly)",
	"freeze":   "stop orchestrating the service (--local: this node's instance)",
	"thaw":     "resume orchestration (--local: this node's instance)",
	"clear":    "reset a failed monitor state (--node NODE, default every node)",
	"abort":    "drop the current target state",
	"takeover": "move the service to this node",
	"giveback": "move the service back to its placement leader",
	"switch":   "move the service to --to NODE",
}

func ctx(c *cli.Context) context.Context { return c.Context }

// selected resolves -s against the services the daemon knows.
func selected(c *cli.Context, cl *api.Client) ([]string, error) {
	sel := c.String("service")
	if sel == "" {
		return nil, cliutil.Usage("no service selected: use -s SELECTOR")
	}
	entries, err := cl.Services(ctx(c))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name)
	}
	out := Select(sel, names)
	if len(out) == 0 {
		return nil, cliutil.Failed("no service matches %q", sel)
	}
	return out, nil
}

// Select returns the names matching a selector: a name, a comma list or
// globs, in sorted order without duplicates.
func Select(sel string, names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, part := range strings.Split(sel, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		for _, n := range names {
			if ok, _ := path.Match(part, n); ok && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func serviceAction(c *cli.Context, action string) error {
	if c.Args().Len() > 0 {
		return cliutil.Usage("%s: unexpected argument %q", action, c.Args().First())
	}
	if action == "switch" && c.String("to") == "" {
		return cliutil.Usage("switch needs --to NODE")
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	var failures []string
	for _, name := range names {
		req := api.ActionRequest{Name: name, Action: action, Local: c.Bool("local"), Node: c.String("node"), Wait: c.Bool("wait")}
		if action == "switch" {
			req.Node = c.String("to")
		}
		actx, cancel := context.WithCancel(ctx(c))
		if req.Wait {
			// the daemon answers at --time with where the target stands;
			// the margin lets that answer arrive
			req.WaitTimeout = c.Duration("time")
			actx, cancel = context.WithTimeout(ctx(c), c.Duration("time")+5*time.Second)
		}
		res, err := cl.Action(actx, req)
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		if timedOut {
			failures = append(failures, fmt.Sprintf("%s: timed out after %s waiting for the target (it stays in place: see print status, or abort)", name, c.Duration("time")))
			continue
		}
		if err != nil {
			if cliutil.StatusOf(err) == cliutil.ExitUsage {
				return err
			}
			failures = append(failures, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if asJSON {
			cliutil.PrintJSON(c.App.Writer, map[string]any{"service": name, "id": res.ID, "result": res.Result})
		} else {
			fmt.Fprintf(c.App.Writer, "%s: %s\n", name, res.Result)
		}
	}
	if len(failures) > 0 {
		return cliutil.Failed("%s", strings.Join(failures, "; "))
	}
	return nil
}

// checkConfigFile reads and validates --config FILE here, so that errors
// name the user's file, without a daemon. The service name is -s, else the
// file's base name.
func checkConfigFile(c *cli.Context, action string) (file, name string, data []byte, err error) {
	file = c.String("config")
	if file == "" {
		return "", "", nil, cliutil.Usage("%s needs --config FILE", action)
	}
	name = c.String("service")
	if name == "" {
		name = config.ServiceNameFromFile(file)
	}
	if err := config.ValidServiceName(name); err != nil {
		return "", "", nil, cliutil.Usage("%v", err)
	}
	if data, err = os.ReadFile(file); err != nil {
		return "", "", nil, cliutil.Usage("%v", err)
	}
	if _, err := tomlfile.ParseService(file, name, data); err != nil {
		return "", "", nil, err
	}
	return file, name, data, nil
}

func create(c *cli.Context) error {
	file, name, data, err := checkConfigFile(c, "create")
	if err != nil {
		return err
	}
	replace := c.Bool("replace")
	if err := cliutil.Client(c).Create(ctx(c), api.CreateRequest{Name: name, Config: string(data), File: file, Replace: replace}); err != nil {
		return err
	}
	what := "created"
	if replace {
		what = "config installed"
	}
	fmt.Fprintf(c.App.Writer, "%s: %s\n", name, what)
	return nil
}

func ls(c *cli.Context) error {
	entries, err := cliutil.Client(c).Services(ctx(c))
	if err != nil {
		return err
	}
	if sel := c.String("service"); sel != "" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name)
		}
		keep := map[string]bool{}
		for _, n := range Select(sel, names) {
			keep[n] = true
		}
		var kept []api.ServiceEntry
		for _, e := range entries {
			if keep[e.Name] {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	if asJSON {
		if entries == nil {
			entries = []api.ServiceEntry{}
		}
		return cliutil.PrintJSON(c.App.Writer, entries)
	}
	fmt.Fprint(c.App.Writer, render.ServiceList(entries))
	return nil
}

func printStatus(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	st, err := cl.Status(ctx(c))
	if err != nil {
		return err
	}
	if asJSON {
		if len(names) == 1 {
			return cliutil.PrintJSON(c.App.Writer, st.Services[names[0]])
		}
		out := map[string]any{}
		for _, n := range names {
			out[n] = st.Services[n]
		}
		return cliutil.PrintJSON(c.App.Writer, out)
	}
	for _, n := range names {
		fmt.Fprint(c.App.Writer, render.StatusTree(n, st.Services[n], st.Local))
	}
	return nil
}

func printConfig(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	for _, n := range names {
		raw, err := cl.Config(ctx(c), n)
		if err != nil {
			return err
		}
		if len(names) > 1 {
			fmt.Fprintf(c.App.Writer, "# %s\n", n)
		}
		fmt.Fprint(c.App.Writer, raw)
	}
	return nil
}

// validateFile checks --config FILE without a daemon.
func validateFile(c *cli.Context) error {
	file, _, _, err := checkConfigFile(c, "validate")
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s: valid\n", file)
	return nil
}

func validateInstalled(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	p := cliutil.Paths(c)
	for _, n := range names {
		raw, err := cl.Config(ctx(c), n)
		if err != nil {
			return err
		}
		if _, err := tomlfile.ParseService(p.ServiceConf(n), n, []byte(raw)); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s: valid\n", n)
	}
	return nil
}

func editConfig(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return cliutil.Usage("edit config takes one service, %d selected", len(names))
	}
	name := names[0]
	raw, err := cl.Config(ctx(c), name)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", name+".*.toml")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.WriteString(raw)
	tmp.Close()
	editor := os.Getenv("EDITOR")
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "editor", tmpName)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return cliutil.Failed("editor: %v (your edit is kept in %s)", err, tmpName)
	}
	data, err := os.ReadFile(tmpName)
	if err != nil {
		return err
	}
	if string(data) == raw {
		os.Remove(tmpName)
		fmt.Fprintf(c.App.Writer, "%s: unchanged\n", name)
		return nil
	}
	if _, err := tomlfile.ParseService(tmpName, name, data); err != nil {
		return fmt.Errorf("%w (nothing installed; your edit is kept in %s)", err, tmpName)
	}
	req := api.CreateRequest{Name: name, Config: string(data), File: tmpName, Replace: true, Base: dataset.ConfigDigest([]byte(raw))}
	if err := cl.Create(ctx(c), req); err != nil {
		return fmt.Errorf("%w (your edit is kept in %s)", err, tmpName)
	}
	os.Remove(tmpName)
	fmt.Fprintf(c.App.Writer, "%s: config installed\n", name)
	return nil
}

func keyword(c *cli.Context, op string) error {
	kws := c.StringSlice("kw")
	if len(kws) == 0 {
		return cliutil.Usage("%s needs --kw", op)
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	for _, n := range names {
		res, err := cl.Keyword(ctx(c), api.KeywordRequest{Name: n, Op: op, Kws: kws})
		if err != nil {
			return err
		}
		for _, v := range res.Values {
			if len(names) > 1 {
				fmt.Fprintf(c.App.Writer, "%s: %s\n", n, v)
			} else {
				fmt.Fprintln(c.App.Writer, v)
			}
		}
	}
	return nil
}

func logs(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return cliutil.Usage("logs takes one service, %d selected", len(names))
	}
	if !c.Bool("follow") {
		out, err := cl.Logs(ctx(c), names[0], c.Int("lines"))
		if err != nil {
			return err
		}
		fmt.Fprint(c.App.Writer, out)
		return nil
	}
	q := map[string][]string{"name": {names[0]}, "lines": {fmt.Sprint(c.Int("lines"))}, "follow": {"1"}}
	return cl.Stream(ctx(c), api.PathLogs, q, func(line []byte) error {
		_, err := fmt.Fprintf(c.App.Writer, "%s\n", line)
		return err
	})
}

// explain prints, for each selected service, the local daemon's
// explanation of where it may run and what its monitor waits for.
func explain(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return cliutil.Usage("explain: unexpected argument %q", c.Args().First())
	}
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	all := make([]*api.Explanation, 0, len(names))
	for _, n := range names {
		e, err := cl.Explain(ctx(c), n, c.Bool("start"))
		if err != nil {
			return err
		}
		all = append(all, e)
	}
	if asJSON {
		if len(all) == 1 {
			return cliutil.PrintJSON(c.App.Writer, all[0])
		}
		return cliutil.PrintJSON(c.App.Writer, all)
	}
	for i, e := range all {
		if i > 0 {
			fmt.Fprintln(c.App.Writer)
		}
		fmt.Fprint(c.App.Writer, render.Explain(e))
	}
	return nil
}
