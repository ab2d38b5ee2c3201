package svcmgr

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/internal/fsutil"
)

// Admin-signed configs (docs/security.md, "Admin-signed configs"): svcmgr
// signs with an admin's private key, read from --key FILE or
// $HAVEN_ADMIN_KEY; a node never holds one. `svcmgr sign FILE` signs a
// file (on a workstation: --cluster NAME), `svcmgr -s S sign` the
// installed config; set, unset, edit config, create and scale sign the
// new text when given a key, and send it whole (a replace, compare-and-swap
// on the config read), since the daemon cannot sign a keyword edit.

// EnvAdminKey names the admin key file when --key is not given.
const EnvAdminKey = "HAVEN_ADMIN_KEY"

func keyFlag() cli.Flag {
	return &cli.StringFlag{Name: "key", Usage: "sign with the admin key `FILE` (also $" + EnvAdminKey + ")", EnvVars: []string{EnvAdminKey}}
}

// adminKey is the key of --key or $HAVEN_ADMIN_KEY, nil when neither is
// given.
func adminKey(c *cli.Context) (*tomlfile.AdminKey, error) {
	path := c.String("key")
	if path == "" {
		return nil, nil
	}
	k, err := tomlfile.LoadAdminKey(path)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// clusterName is --cluster, else the name in this node's cluster.toml.
func clusterName(c *cli.Context) (string, error) {
	if n := c.String("cluster"); n != "" {
		return n, nil
	}
	p := cliutil.Paths(c)
	if _, err := os.Stat(p.Cluster); err != nil {
		return "", cliutil.Usage("the cluster's name is signed too: give --cluster NAME (no cluster.toml here: %v)", err)
	}
	n, err := tomlfile.LoadNode(p.NodeConf)
	if err == nil {
		var cl *config.ClusterConfig
		if cl, err = tomlfile.LoadCluster(p.Cluster, n.Name); err == nil {
			return cl.Name, nil
		}
	}
	return "", cliutil.Usage("the cluster's name is signed too: give --cluster NAME (this host's cluster.toml: %v)", err)
}

// checkSignature checks the admin signature of data, the config of
// service name (file), as this node would take it: with [admin_keys] in
// this node's cluster.toml, refused (exit 2, the reason) unless one of
// them signed it; note says who signed it, or why it was not checked.
func checkSignature(c *cli.Context, file, name string, data []byte) (note string, err error) {
	s, signed := config.SignatureOf(data)
	var cl *config.ClusterConfig
	p := cliutil.Paths(c)
	if _, statErr := os.Stat(p.Cluster); statErr == nil {
		n, err := tomlfile.LoadNode(p.NodeConf)
		if err != nil {
			return "", err
		}
		if cl, err = tomlfile.LoadCluster(p.Cluster, n.Name); err != nil {
			return "", err
		}
	}
	switch {
	case cl != nil && len(cl.AdminKeys) > 0:
		v, err := config.VerifyService(file, data, cl.Name, name, cl.AdminKeys)
		if err != nil {
			return "", cliutil.Usage("%v", err)
		}
		return fmt.Sprintf(" (signed by %s, serial %d: cluster.toml lists that key)", v.Key, v.Serial), nil
	case !signed:
		return "", nil
	case cl != nil:
		return fmt.Sprintf(" (signed by %s, serial %d; not checked: cluster.toml lists no [admin_keys])", s.Key, s.Serial), nil
	}
	return fmt.Sprintf(" (signed by %s, serial %d; not checked: no cluster.toml here)", s.Key, s.Serial), nil
}

// nextSerial is the serial of a new signature of a config whose current
// text is prev: the time in seconds, above prev's serial.
func nextSerial(prev []byte) uint64 {
	s := uint64(time.Now().Unix())
	if old, ok := config.SignatureOf(prev); ok && old.Serial >= s {
		s = old.Serial + 1
	}
	return s
}

// signText signs raw, the config of service, with k for the cluster of
// this node (or --cluster), at --serial or the next serial after prev.
func signText(c *cli.Context, k *tomlfile.AdminKey, service string, raw, prev []byte) ([]byte, error) {
	cluster, err := clusterName(c)
	if err != nil {
		return nil, err
	}
	serial := c.Uint64("serial")
	if serial == 0 {
		serial = nextSerial(prev)
	}
	return config.SignService(raw, cluster, service, k.Name, k.Priv, serial)
}

func signCommand() *cli.Command {
	return &cli.Command{Name: "sign", Usage: "sign a service config with an admin key: FILE (written in place, or --out), or the installed config of -s S (installed again, signed)",
		UsageText: "svcmgr [-s NAME] sign FILE --key KEYFILE [--cluster NAME] [--serial N] [--out FILE]\nsvcmgr -s NAME sign --key KEYFILE",
		Description: "The signature is the config's last line (# haven-signature: KEY SERIAL SIG), over the text before it, the cluster's name, the service's name " +
			"(-s, else the file's name) and the serial (default: the time in seconds, above the serial the text holds). On a workstation without the cluster's files, " +
			"give --cluster. A cluster whose cluster.toml lists [admin_keys] takes only configs signed by one of them.\n\n" + globalsHelp,
		Flags: []cli.Flag{keyFlag(),
			&cli.StringFlag{Name: "cluster", Usage: "the cluster's `NAME` (default: this node's cluster.toml)"},
			&cli.Uint64Flag{Name: "serial", Usage: "the serial `N` to sign (default: the time in seconds, above the text's own)"},
			&cli.StringFlag{Name: "out", Usage: "write the signed config to `FILE` instead of in place"}},
		Action: sign}
}

func sign(c *cli.Context) error {
	k, err := adminKey(c)
	if err != nil {
		return err
	}
	if k == nil {
		return cliutil.Usage("sign needs an admin key: --key FILE or $%s (svcmgr key generate makes one)", EnvAdminKey)
	}
	if c.Args().Len() > 1 {
		return cliutil.Usage("sign takes one FILE, %d given", c.Args().Len())
	}
	if c.Args().Len() == 0 {
		return signInstalled(c, k)
	}
	file := c.Args().First()
	name := c.String("service")
	if name == "" {
		name = config.ServiceNameFromFile(file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return cliutil.Usage("%v", err)
	}
	if _, err := tomlfile.ParseService(file, name, data); err != nil {
		return err // sign only what a node would take
	}
	out, err := signText(c, k, name, data, data)
	if err != nil {
		return err
	}
	dst := c.String("out")
	if dst == "" {
		dst = file
	}
	if err := fsutil.WriteAtomic(dst, out, 0o600); err != nil {
		return cliutil.Failed("%v", err)
	}
	s, _ := config.SignatureOf(out)
	fmt.Fprintf(c.App.Writer, "%s: signed for service %s by %s, serial %d\n", dst, name, k.Name, s.Serial)
	return nil
}

// signInstalled signs the installed config of each selected service and
// installs it again (a replace, compare-and-swap on the text read).
func signInstalled(c *cli.Context, k *tomlfile.AdminKey) error {
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
		if err := replaceSigned(c, cl, k, n, []byte(config.Unsigned([]byte(raw))), []byte(raw)); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s: signed by %s and installed\n", n, k.Name)
	}
	return nil
}

// replaceSigned signs next, the new config of service whose installed
// text is prev, and installs it in place of prev (refused if the config
// changed since prev was read).
func replaceSigned(c *cli.Context, cl *api.Client, k *tomlfile.AdminKey, service string, next, prev []byte) error {
	signed, err := signText(c, k, service, next, prev)
	if err != nil {
		return err
	}
	res, err := cl.Create(ctx(c), api.CreateRequest{Name: service, Config: string(signed), File: cliutil.Paths(c).ServiceConf(service),
		Replace: true, Base: dataset.ConfigDigest(prev), Force: c.Bool("force")})
	if err != nil {
		return err
	}
	printWarnings(c, res.Warnings)
	return nil
}

// editSigned applies the keyword edit op kws to the installed config of
// service, signs the result with k and installs it (set, unset, scale
// with a key).
func editSigned(c *cli.Context, cl *api.Client, k *tomlfile.AdminKey, service, op string, kws []string) error {
	raw, err := cl.Config(ctx(c), service)
	if err != nil {
		return err
	}
	codec := tomlfile.ServiceCodec{File: cliutil.Paths(c).ServiceConf}
	next, err := codec.EditService(service, []byte(raw), op, kws)
	if err != nil {
		return err
	}
	return replaceSigned(c, cl, k, service, next, []byte(raw))
}

func keyCommand() *cli.Command {
	return &cli.Command{Name: "key", Usage: "an admin's signing key, whose public key cluster.toml [admin_keys] lists: generate | show",
		Subcommands: []*cli.Command{
			{Name: "generate", Usage: "make an admin key pair: the private key in --key FILE (mode 0600, never replaced, never printed), its [admin_keys] line printed",
				UsageText: "svcmgr key generate --name NAME --key FILE",
				Flags:     []cli.Flag{keyFlag(), &cli.StringFlag{Name: "name", Usage: "the key's `NAME` in [admin_keys] (the admin's)"}},
				Action:    keyGenerate},
			{Name: "show", Usage: "print the [admin_keys] line of the key in --key FILE (its public key)",
				UsageText: "svcmgr key show --key FILE", Flags: []cli.Flag{keyFlag()}, Action: keyShow},
		}}
}

func keyGenerate(c *cli.Context) error {
	path, name := c.String("key"), c.String("name")
	if path == "" || name == "" {
		return cliutil.Usage("key generate needs --name NAME and --key FILE (or $%s)", EnvAdminKey)
	}
	if err := config.ValidKeyName(name); err != nil {
		return cliutil.Usage("--name: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return cliutil.Failed("%v", err)
	}
	k, err := tomlfile.GenerateAdminKey(path, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s = %q\n", k.Name, k.Public())
	return nil
}

func keyShow(c *cli.Context) error {
	k, err := adminKey(c)
	if err != nil {
		return err
	}
	if k == nil {
		return cliutil.Usage("key show needs --key FILE (or $%s)", EnvAdminKey)
	}
	fmt.Fprintf(c.App.Writer, "%s = %q\n", k.Name, k.Public())
	return nil
}
