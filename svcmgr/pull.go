package svcmgr

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"haven/cli/cliutil"
)

// pullCommand is "svcmgr -s S pull": the images of the service's
// container resources fetched on each of its candidate nodes, through
// the local daemon, which asks the others (docs/resources.md,
// "Pulling"). One line per node and image; exit 1 when a node could not
// pull one, or could not be asked.
func pullCommand() *cli.Command {
	return &cli.Command{Name: "pull", Usage: "fetch the images of the service's containers on each of its candidate nodes, ahead of a failover",
		UsageText: "svcmgr -s SELECTOR pull", Description: globalsHelp, Action: pull}
}

func pull(c *cli.Context) error {
	cl := cliutil.Client(c)
	names, err := selected(c, cl)
	if err != nil {
		return err
	}
	var bad []string
	for _, n := range names {
		res, err := cl.Pull(ctx(c), n)
		if err != nil {
			return err
		}
		for _, nd := range res.Nodes {
			if nd.Error != "" {
				fmt.Fprintf(c.App.Writer, "%s: %s: not pulled: %s\n", n, nd.Node, nd.Error)
				bad = append(bad, n+" on "+nd.Node)
				continue
			}
			if len(nd.Images) == 0 {
				fmt.Fprintf(c.App.Writer, "%s: %s: no image to pull\n", n, nd.Node)
			}
			for _, im := range nd.Images {
				if im.Error != "" {
					fmt.Fprintf(c.App.Writer, "%s: %s: %s %s: failed: %s\n", n, nd.Node, im.RID, im.Image, im.Error)
					bad = append(bad, n+" on "+nd.Node)
					continue
				}
				fmt.Fprintf(c.App.Writer, "%s: %s: %s %s: pulled\n", n, nd.Node, im.RID, im.Image)
			}
		}
	}
	if len(bad) > 0 {
		return cliutil.Failed("pull failed: %d of the nodes' pulls (see above)", len(bad))
	}
	return nil
}
