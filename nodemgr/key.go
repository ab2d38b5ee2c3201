package nodemgr

import (
	"crypto/ecdh"
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
		Subcommands: keySubcommands(nodeKeyPair,
			"make this node's key pair (etc/node.key, mode 0600; an existing key is never replaced) and print the [node_keys] line of this node",
			"print the [node_keys] line of this node (its public key) to paste into every member's cluster.toml")}
}

// keyPair is one kind of key file of nodemgr: where it is under the root,
// and the line printed for its public key.
type keyPair struct {
	kind tomlfile.KeyKind
	path func(c *cli.Context) string
	line func(c *cli.Context, pub string) error
}

var nodeKeyPair = keyPair{kind: tomlfile.NodeKeyKind,
	path: func(c *cli.Context) string { return cliutil.Paths(c).NodeKey },
	line: printKeyLine}

// keySubcommands are `generate [--if-missing]` and `show` of kp.
func keySubcommands(kp keyPair, generateUsage, showUsage string) []*cli.Command {
	return []*cli.Command{
		{Name: "generate", Usage: generateUsage,
			Flags:  []cli.Flag{&cli.BoolFlag{Name: "if-missing", Usage: "a key that exists already is no error (install scripts)"}},
			Action: kp.generate},
		{Name: "show", Usage: showUsage, Action: kp.show},
	}
}

func (kp keyPair) generate(c *cli.Context) error {
	if _, err := os.Lstat(kp.path(c)); err == nil && c.Bool("if-missing") {
		return kp.show(c)
	}
	k, err := kp.kind.Generate(kp.path(c))
	if err != nil {
		return err
	}
	return kp.line(c, tomlfile.PublicNodeKey(k))
}

func (kp keyPair) show(c *cli.Context) error {
	k, err := kp.load(c)
	if err != nil {
		return err
	}
	return kp.line(c, tomlfile.PublicNodeKey(k))
}

// load reads the private key, or says how to make it.
func (kp keyPair) load(c *cli.Context) (*ecdh.PrivateKey, error) {
	path := kp.path(c)
	k, err := kp.kind.Load(path)
	if err != nil {
		if _, serr := os.Lstat(path); os.IsNotExist(serr) {
			return nil, cliutil.Failed("%s: no %s: make one with %s", path, kp.kind.What, kp.kind.GenerateCmd)
		}
		return nil, err
	}
	return k, nil
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
