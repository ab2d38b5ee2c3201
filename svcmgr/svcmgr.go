package svcmgr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/cli/render"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/internal/termtext"
	"haven/internal/version"
)

// App returns the svcmgr command. The app's flags (-s, --format, --root)
// apply to every action; each action defines its own others, listed by its
// --help. Any flag may stand anywhere on the line (cliutil.Hoist).
func App() *cli.App {
	flags := append(cliutil.GlobalFlags(),
		&cli.StringFlag{Name: "service", Aliases: []string{"s"}, Usage: "`SELECTOR`: a service name, a comma list or a glob"},
	)
	return &cli.App{
		// --version prints the release, commit, Go and compat versions; the
		// shell completions call the tool with --generate-bash-completion
		Version:              version.String(),
		EnableBashCompletion: true,
		BashComplete:         cliutil.CompleteCommands,

		Name:      "svcmgr",
		Usage:     "manage Haven services",
		UsageText: "svcmgr -s SELECTOR ACTION [flags]\nsvcmgr validate --config FILE\nsvcmgr ACTION --help: the flags of an action",
		Flags:     flags,
		Commands: []*cli.Command{
			{Name: "create", Usage: "install a service config (--config FILE; name from -s or the file name; --replace: of an existing service; --force: naming services or OCF agents not there yet)",
				UsageText: "svcmgr [-s NAME] create --config FILE [--replace] [--force]", Description: forceHelp + globalsHelp,
				Flags: []cli.Flag{configFlag("the config `FILE` to install"),
					&cli.BoolFlag{Name: "replace", Usage: "replace the config of an existing service (e.g. one whose config is invalid)"},
					forceFlag(), keyFlag()},
				Action: create},
			signCommand(),
			keyCommand(),
			action("delete"),
			action("start"), action("stop"), action("freeze"), action("thaw"),
			action("clear"), action("abort"), action("takeover"), action("giveback"), action("switch"),
			action("restart"),
			scaleCommand(),
			pullCommand(),
			rolloutCommand(),
			rollbackCommand(),
			simulateCommand(),
			describeCommand(),
			{Name: "ls", Usage: "list services", UsageText: "svcmgr [-s SELECTOR] ls", Description: globalsHelp, Action: ls},
			{Name: "print", Usage: "print status | print config", Subcommands: []*cli.Command{
				{Name: "status", Usage: "the service's status tree (--format json: the status object; -r: check now first)",
					UsageText: "svcmgr -s SELECTOR print status [-r] [--format json]", Description: globalsHelp,
					Flags: []cli.Flag{refreshFlag()}, Action: printStatus},
				{Name: "config", Usage: "the installed config (--format json: sections, keys, values)",
					UsageText: "svcmgr -s SELECTOR print config [--format json]", Description: globalsHelp, Action: printConfig},
			}},
			{Name: "json", Usage: "json status", Subcommands: []*cli.Command{
				{Name: "status", Usage: "alias of print status --format json", UsageText: "svcmgr -s SELECTOR json status [-r]",
					Description: globalsHelp, Flags: []cli.Flag{refreshFlag()}, Action: func(c *cli.Context) error {
						c.Set("format", "json")
						return printStatus(c)
					}},
			}},
			{Name: "validate", Usage: "validate --config FILE (no daemon needed) | validate config",
				UsageText: "svcmgr [-s NAME] validate --config FILE\nsvcmgr -s SELECTOR validate config", Description: globalsHelp,
				Flags: []cli.Flag{configFlag("the config `FILE` to check")}, Action: validateFile,
				Subcommands: []*cli.Command{{Name: "config", Usage: "check the installed config", Description: globalsHelp, Action: validateInstalled}}},
			{Name: "edit", Usage: "edit config", Subcommands: []*cli.Command{
				{Name: "config", Usage: "edit the config in $EDITOR, validate, install (--key: signed with that admin key)", Description: globalsHelp,
					Flags: append([]cli.Flag{keyFlag()}, rolloutFlags()...), Action: editConfig},
			}},
			{Name: "set", Usage: "set --kw K=V (also K+=V, K-=V for lists; --add: a new resource; --force: naming services or OCF agents not there yet)",
				UsageText:   "svcmgr -s SELECTOR set [--add] [--force] [--rollout [--wait]] --kw K=V [--kw K=V ...]",
				Description: forceHelp + globalsHelp, Flags: append([]cli.Flag{kwFlag("a keyword to set: `K=V`, K+=V or K-=V (lists); repeatable"),
					&cli.BoolFlag{Name: "add", Usage: "the keywords may add a resource the config does not have (without it, a resource name that is not in the config is refused: a typo)"},
					forceFlag(), keyFlag()}, rolloutFlags()...),
				Action: func(c *cli.Context) error {
					if c.Bool("add") {
						return keyword(c, "add")
					}
					return keyword(c, "set")
				}},
			{Name: "get", Usage: "get --kw K", UsageText: "svcmgr -s SELECTOR get --kw K [--kw K ...]",
				Description: globalsHelp, Flags: []cli.Flag{kwFlag("a keyword `K` to print (its default when unset); repeatable")},
				Action: func(c *cli.Context) error { return keyword(c, "get") }},
			{Name: "unset", Usage: "unset --kw K (a keyword; TYPE#NAME: a whole resource)", UsageText: "svcmgr -s SELECTOR unset --kw K [--kw K ...]",
				Description: globalsHelp, Flags: append([]cli.Flag{kwFlag("a keyword `K` to remove (its default applies), or a resource TYPE#NAME to remove; repeatable"), keyFlag()}, rolloutFlags()...),
				Action: func(c *cli.Context) error { return keyword(c, "unset") }},
			{Name: "logs", Usage: "the service's log lines (--follow, --lines N, --node N: another node's; --format json: one object a line)",
				UsageText: "svcmgr -s NAME logs [--follow] [--lines N] [--node N] [--format json]", Description: globalsHelp,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "follow", Usage: "keep printing new lines (this node's log only)"},
					&cli.StringFlag{Name: "node", Usage: "read the log of node `N` through the cluster (the last lines, at most 2000)"},
					&cli.IntFlag{Name: "lines", Value: 100, Usage: "how many past lines"},
				}, Action: logs},
			{Name: "explain", Usage: "why the service runs (or not) where it does: every node's verdict, the leader, the local monitor (--start: for a start now; --format json)",
				UsageText: "svcmgr -s SELECTOR explain [--start] [--format json]", Description: globalsHelp,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "start", Usage: "what a start now would do, as if the service were down everywhere"}},
				Action: explain},
		},
	}
}

// globalsHelp is said in every command's help: the app's flags apply
// too, and any flag may stand anywhere on the line.
const globalsHelp = "Also: -s SELECTOR, --format human|json, --root DIR (see svcmgr --help).\nAny flag may stand anywhere on the line."

func configFlag(usage string) cli.Flag { return &cli.StringFlag{Name: "config", Usage: usage} }

// forceHelp says what create --force and set --force let through.
const forceHelp = "The daemon refuses a config naming what does not exist: a service in DEFAULT.hard_affinity or DEFAULT.parents " +
	"that the cluster does not have, an OCF agent that none of the service's nodes has (exit 2, the file, the line and the key). " +
	"--force installs it anyway, each such name said as a warning on standard error: for configs installed in any order " +
	"(a configuration-management tool), or an agent installed later. The service waits meanwhile (explain says why). " +
	"A cycle of parents and any other error are refused all the same.\n\n"

func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "install even if it names a service or an OCF agent that does not exist yet (a warning each, on standard error)"}
}

// printWarnings prints what the daemon installed anyway (--force).
func printWarnings(c *cli.Context, warns []string) {
	for _, w := range warns {
		fmt.Fprintf(c.App.ErrWriter, "warning: %s\n", termtext.Clean(w))
	}
}
func kwFlag(usage string) cli.Flag { return &cli.StringSliceFlag{Name: "kw", Usage: usage} }
func refreshFlag() cli.Flag {
	return &cli.BoolFlag{Name: "refresh", Aliases: []string{"r"}, Usage: "check the local instances now, then print"}
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
	cfg, err := tomlfile.ParseService(file, name, data)
	if err != nil {
		return "", "", nil, err
	}
	if err := checkOCF(c, cfg); err != nil {
		return "", "", nil, err
	}
	return file, name, data, nil
}

func create(c *cli.Context) error {
	file, name, data, err := checkConfigFile(c, "create")
	if err != nil {
		return err
	}
	k, err := adminKey(c)
	if err != nil {
		return err
	}
	if k != nil {
		if data, err = signText(c, k, name, data, data); err != nil {
			return err
		}
	}
	replace := c.Bool("replace")
	res, err := cliutil.Client(c).Create(ctx(c), api.CreateRequest{Name: name, Config: string(data), File: file, Replace: replace, Force: c.Bool("force")})
	if err != nil {
		return err
	}
	printWarnings(c, res.Warnings)
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
	if c.Bool("refresh") {
		// the local instances are checked now; the others are as their
		// nodes last announced them
		for _, n := range names {
			if err := cl.Refresh(ctx(c), n); err != nil {
				return err
			}
		}
	}
	st, err := cl.Status(ctx(c))
	if err != nil {
		return err
	}
	if asJSON {
		if len(names) == 1 {
			return cliutil.PrintStatusJSON(c.App.Writer, st.Services[names[0]])
		}
		out := map[string]any{}
		for _, n := range names {
			out[n] = st.Services[n]
		}
		return cliutil.PrintStatusJSON(c.App.Writer, out)
	}
	for _, n := range names {
		fmt.Fprint(c.App.Writer, render.StatusTree(n, st.Services[n], st.Local))
	}
	return nil
}

// printConfig prints the installed config as written; with --format json,
// an object of sections (DEFAULT, app#web...) of keys and values, or one
// such object by service when several are selected.
func printConfig(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	all := map[string]any{}
	for _, n := range names {
		raw, err := cl.Config(ctx(c), n)
		if err != nil {
			return err
		}
		if asJSON {
			secs, err := tomlfile.ServiceSections(cliutil.Paths(c).ServiceConf(n), []byte(raw))
			if err != nil {
				return fmt.Errorf("%w (svcmgr print config shows it as written)", err)
			}
			if len(names) == 1 {
				return cliutil.PrintJSON(c.App.Writer, secs)
			}
			all[n] = secs
			continue
		}
		if len(names) > 1 {
			fmt.Fprintf(c.App.Writer, "# %s\n", n)
		}
		if cliutil.IsTerminal(c.App.Writer) {
			raw = termtext.CleanText(raw) // exact in a pipe or a file
		}
		fmt.Fprint(c.App.Writer, raw)
	}
	if asJSON {
		return cliutil.PrintJSON(c.App.Writer, all)
	}
	return nil
}

// validateFile checks --config FILE without a daemon.
func validateFile(c *cli.Context) error {
	file, name, data, err := checkConfigFile(c, "validate")
	if err != nil {
		return err
	}
	note, err := checkSignature(c, file, name, data)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s: valid%s\n", file, note)
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
		cfg, err := tomlfile.ParseService(p.ServiceConf(n), n, []byte(raw))
		if err != nil {
			return err
		}
		if err := checkOCF(c, cfg); err != nil {
			return err
		}
		note, err := checkSignature(c, p.ServiceConf(n), n, []byte(raw))
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s: valid%s\n", n, note)
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
	if err := checkRolloutFlags(c); err != nil {
		return err
	}
	k, err := adminKey(c)
	if err != nil {
		return err
	}
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
	// the edit file goes in every way out but two: the editor failed, or
	// the edit was refused and not edited again (it is then named)
	for {
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
		var cfg *config.ServiceConfig
		if cfg, err = tomlfile.ParseService(tmpName, name, data); err == nil {
			err = checkOCF(c, cfg)
		}
		if err == nil && k != nil {
			data, err = signText(c, k, name, data, []byte(raw))
		}
		if err == nil {
			req := api.CreateRequest{Name: name, Config: string(data), File: tmpName, Replace: true, Base: dataset.ConfigDigest([]byte(raw))}
			if _, err = cl.Create(ctx(c), req); err == nil {
				os.Remove(tmpName)
				fmt.Fprintf(c.App.Writer, "%s: config installed\n", name)
				return rolloutAfterEdit(c, cl, names)
			}
		}
		// a refused config (exit 2) is offered to the editor again, as
		// crontab -e and visudo do, when a person answers on a terminal
		if cliutil.StatusOf(err) != cliutil.ExitUsage || !askAgain(c, err) {
			return fmt.Errorf("%w (nothing installed; your edit is kept in %s)", err, tmpName)
		}
	}
}

// askAgain prints a refused edit's error and asks whether to edit again:
// only when standard input and output are a terminal; yes by default.
func askAgain(c *cli.Context, err error) bool {
	if !cliutil.IsTerminal(os.Stdin) || !cliutil.IsTerminal(c.App.Writer) {
		return false
	}
	fmt.Fprintf(c.App.Writer, "%v\nedit again? [Y/n] ", err)
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := os.Stdin.Read(b)
		if n == 0 || err != nil || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	a := strings.ToLower(strings.TrimSpace(string(line)))
	return a == "" || a == "y" || a == "yes"
}

func keyword(c *cli.Context, op string) error {
	kws := c.StringSlice("kw")
	if len(kws) == 0 {
		return cliutil.Usage("%s needs --kw", op)
	}
	if op != "get" {
		if err := checkRolloutFlags(c); err != nil {
			return err
		}
	}
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	k, err := adminKey(c)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := precheckOCF(c, cl, n, op, kws); err != nil {
			return err
		}
		if k != nil && op != "get" {
			if err := editSigned(c, cl, k, n, op, kws); err != nil {
				return err
			}
			continue
		}
		res, err := cl.Keyword(ctx(c), api.KeywordRequest{Name: n, Op: op, Kws: kws, Force: c.Bool("force")})
		if err != nil {
			return err
		}
		printWarnings(c, res.Warnings)
		for _, v := range res.Values {
			if len(names) > 1 {
				fmt.Fprintf(c.App.Writer, "%s: %s\n", n, termtext.Clean(v))
			} else {
				fmt.Fprintln(c.App.Writer, termtext.Clean(v))
			}
		}
	}
	if op == "get" {
		return nil
	}
	return rolloutAfterEdit(c, cl, names)
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
