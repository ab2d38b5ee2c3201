package daemon

import (
	"errors"

	"haven/config"
	"haven/node"
)

// Admin-signed configs (docs/security.md, "Admin-signed configs"): with
// [admin_keys] in cluster.toml, every config this node takes is checked
// for an admin's signature where it is parsed: from a peer (memberCodec),
// from the disk at start-up (loadServices), from the local API (create,
// replace, edit config). A keyword edit made here cannot be signed by the
// daemon, which holds no admin key: svcmgr signs the whole new text and
// sends it as a replace. The serials (replays) are the core's
// (node/configsigned.go).

// sigs is the signature check of this cluster's configs.
func (d *Daemon) sigs() config.SignatureCheck {
	return config.SignatureCheck{Cluster: d.cluster.Name, Keys: d.cluster.AdminKeys}
}

// keywordNeedsSignature refuses a keyword edit made through the API on a
// cluster with admin keys: the new text would be unsigned.
func (d *Daemon) keywordNeedsSignature(op string) error {
	if !d.sigs().On() || op == "get" {
		return nil
	}
	if op == "add" {
		op = "set --add"
	}
	return badInput(errors.New("config_refused: unsigned: cluster.toml lists [admin_keys]: a config change needs an admin's signature: svcmgr " + op + " --key KEYFILE (or HAVEN_ADMIN_KEY=KEYFILE), which signs the new config and installs it"))
}

// signatureRefused reports whether err refuses a config for its
// signature.
func signatureRefused(err error) bool {
	var se *config.SignatureError
	return errors.As(err, &se)
}

// keepRefused records a config file read at start-up that was refused
// for its signature: shown invalid, not acted on, and the content of its
// recorded version taken back from a peer that holds it.
func (d *Daemon) keepRefused(name string, raw []byte, err error) {
	d.setInvalid(name, raw, err)
	d.drv.Input(node.ServiceKept{Service: name, Restore: true})
}
