package svcmgr

import (
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/config"
	"haven/config/tomlfile"
	"haven/node/view"
)

// Admin-signed orders (docs/security.md, "Admin-signed deletions and
// targets"): with --key (or $HAVEN_ADMIN_KEY), delete signs the deletion
// and the orchestrated actions sign the target they set, which a cluster
// whose cluster.toml lists [admin_keys] requires. Without a key nothing is
// signed: the daemon of such a cluster refuses (exit 2).

// signedVerb reports whether the action takes --key: a deletion or an
// action that sets a target asking the nodes to act (abort and clear ask
// for nothing new: unsigned).
func signedVerb(action string) bool {
	switch action {
	case "delete", "start", "stop", "freeze", "thaw", "takeover", "giveback", "switch":
		return true
	}
	return false
}

// signOrder is the signature of the order req (action on req.Name), "" without a key
// or for a --local action.
func signOrder(c *cli.Context, cl *api.Client, action string, req api.ActionRequest) (string, error) {
	if !signedVerb(action) || req.Local {
		return "", nil
	}
	k, err := adminKey(c)
	if err != nil || k == nil {
		return "", err
	}
	cluster, err := clusterName(c)
	if err != nil {
		return "", err
	}
	if action == "delete" {
		// above the serial of the config it deletes: an older deletion
		// sent again never deletes the service created again
		raw, err := cl.Config(ctx(c), req.Name)
		if err != nil {
			return "", err
		}
		return config.SignDeletion(cluster, req.Name, k.Name, k.Priv, nextSerial([]byte(raw)))
	}
	local := ""
	if action == "takeover" {
		n, err := tomlfile.LoadNode(cliutil.Paths(c).NodeConf)
		if err != nil {
			return "", err
		}
		local = n.Name
	}
	t, _ := view.ActionTarget(action, local, req.Node)
	if action == "start" || action == "stop" {
		t.Node = req.Node // --node: a flex service's instance there
	}
	// milliseconds: an admin's targets of one service follow each other
	// faster than once a second (stop, then start)
	return config.SignTarget(cluster, req.Name, t.Expect, t.Node, k.Name, k.Priv, uint64(time.Now().UnixMilli()))
}
