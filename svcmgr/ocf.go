package svcmgr

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/config"
	"haven/config/tomlfile"
	"haven/resource"
	"haven/resource/ocf"
)

// ocfRoot is this node's OCF root: node.toml's ocf_root (the default
// when node.toml is missing or unreadable: the daemon says why then).
func ocfRoot(c *cli.Context) string {
	if n, err := tomlfile.LoadNode(cliutil.Paths(c).NodeConf); err == nil && n.OCFRoot != "" {
		return n.OCFRoot
	}
	return ocf.DefaultRoot
}

// checkOCF checks the [ocf.NAME] resources of cfg against their agents'
// meta-data on this node (resource.CheckOCF), and prints what could not
// be checked here on standard error.
func checkOCF(c *cli.Context, cfg *config.ServiceConfig) error {
	notes, err := resource.CheckOCF(ctx(c), cfg, ocfRoot(c))
	for _, n := range notes {
		fmt.Fprintf(c.App.ErrWriter, "%s: note: %s\n", cfg.File, n)
	}
	return err
}

// precheckOCF checks a set, add or unset of service name against its
// agents' meta-data here before the daemon applies it: the edit is made
// on the installed config as the daemon will make it. A config without
// ocf resources, or an edit the daemon will refuse anyway, is left to the
// daemon.
func precheckOCF(c *cli.Context, cl *api.Client, name, op string, kws []string) error {
	if op == "get" {
		return nil
	}
	raw, err := cl.Config(ctx(c), name)
	if err != nil {
		return nil
	}
	codec := tomlfile.ServiceCodec{File: cliutil.Paths(c).ServiceConf}
	next, err := codec.EditService(name, []byte(raw), op, kws)
	if err != nil {
		return nil
	}
	cfg, err := codec.ParseService(name, next)
	if err != nil {
		return nil
	}
	return checkOCF(c, cfg)
}

// describeCommand is `svcmgr describe ocf:PROVIDER:TYPE`: an agent's
// parameters and actions, from its meta-data, as `crm ra info` prints them.
func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "print an OCF agent's parameters and actions (its meta-data): describe ocf:heartbeat:IPaddr2",
		UsageText: "svcmgr describe [ocf:]PROVIDER:TYPE [--format json]\nsvcmgr describe --list [PROVIDER]",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "list", Usage: "list the OCF agents installed on this node"}},
		Description: "The agent runs here (its meta-data action) under node.toml's ocf_root (/usr/lib/ocf by default). " +
			"Write the parameters in the service config as [ocf.NAME] params = { name = \"value\" }; docs/resources.md.\n\n" + globalsHelp,
		Action: describe,
	}
}

func describe(c *cli.Context) error {
	root := ocfRoot(c)
	if c.Bool("list") {
		return listAgents(c, root)
	}
	if c.NArg() != 1 {
		return cliutil.Usage("describe takes one agent, e.g. ocf:heartbeat:IPaddr2 (or --list)")
	}
	prov, typ, err := config.ParseAgent(c.Args().First())
	if err != nil {
		return cliutil.Usage("%v", err)
	}
	a := ocf.Agent{Root: root, Provider: prov, Type: typ}
	if err := a.Installed(); err != nil {
		return cliutil.Failed("%v: cannot run here", err)
	}
	md, err := resource.ReadOCFMetadata(ctx(c), a)
	if err != nil {
		return cliutil.Failed("%v", err)
	}
	if c.String("format") == "json" {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(md)
	}
	md.Describe(c.App.Writer, a)
	return nil
}

// listAgents prints ocf:PROVIDER:TYPE for each agent installed.
func listAgents(c *cli.Context, root string) error {
	agents, err := ocf.List(root, c.Args().First())
	if err != nil {
		return cliutil.Failed("%v", err)
	}
	if len(agents) == 0 {
		return cliutil.Failed("no OCF agent under %s (apt-get install resource-agents)", root)
	}
	var names []string
	for _, a := range agents {
		names = append(names, a.Name())
	}
	fmt.Fprintln(c.App.Writer, strings.Join(names, "\n"))
	return nil
}
