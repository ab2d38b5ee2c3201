package nodemgr

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
	"haven/config/tomlfile"
)

// keyCommand is `nodemgr key`: this node's key pair (per-node keys,
// docs/security.md). The private key never leaves node.key; what is
// printed is the line of cluster.toml [node_keys] naming this node.
func keyCommand() *cli.Command {
	return &cli.Command{Name: "key", Usage: "this node's key pair, whose public key cluster.toml [node_keys] lists: generate | show",
		Subcommands: []*cli.Command{
			{Name: "generate", Usage: "make this node's key pair (etc/node.key, mode 0600; an existing key is never replaced) and print the [node_keys] line of this node",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "if-missing", Usage: "a key that exists already is no error (install scripts)"}},
				Action: keyGenerate},
			{Name: "show", Usage: "print the [node_keys] line of this node (its public key) to paste into every member's cluster.toml", Action: keyShow},
		}}
}

func keyGenerate(c *cli.Context) error {
	p := cliutil.Paths(c)
	if _, err := os.Lstat(p.NodeKey); err == nil && c.Bool("if-missing") {
		return keyShow(c)
	}
	k, err := tomlfile.GenerateNodeKey(p.NodeKey)
	if err != nil {
		return err
	}
	return printKeyLine(c, tomlfile.PublicNodeKey(k))
}

func keyShow(c *cli.Context) error {
	p := cliutil.Paths(c)
	k, err := tomlfile.LoadNodeKey(p.NodeKey)
	if err != nil {
		if _, serr := os.Lstat(p.NodeKey); os.IsNotExist(serr) {
			return cliutil.Failed("%s: no node key: make one with nodemgr key generate", p.NodeKey)
		}
		return err
	}
	return printKeyLine(c, tomlfile.PublicNodeKey(k))
}

// printKeyLine prints `NAME = "KEY"`, this node's line of [node_keys].
func printKeyLine(c *cli.Context, pub string) error {
	n, err := tomlfile.LoadNode(cliutil.Paths(c).NodeConf)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s = %q\n", n.Name, pub)
	return err
}
