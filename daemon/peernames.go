package daemon

import (
	"go.uber.org/zap"

	"haven/config"
)

// maxBadPeerNames bounds the memory of refused names: a hostile peer
// cannot grow it (nor the log) without limit.
const maxBadPeerNames = 256

// peerServiceName reports whether a service name received from a peer
// (from, "" when unknown here) in what (configs, targets, clears) is
// valid. An invalid one is logged once and must not be used: it could
// name a path outside the service directory.
func (d *Daemon) peerServiceName(from, what, name string) bool {
	if err := config.ValidServiceName(name); err != nil {
		d.refusePeerName(from, what, err, zap.String("svc", name))
		return false
	}
	return true
}

// peerNodeName is peerServiceName for the node named by the entry of
// service svc ("" is no node).
func (d *Daemon) peerNodeName(from, what, svc, node string) bool {
	if node == "" {
		return true
	}
	if err := config.ValidNodeName(node); err != nil {
		d.refusePeerName(from, what, err, zap.String("svc", svc), zap.String("node", node))
		return false
	}
	return true
}

func (d *Daemon) refusePeerName(from, what string, err error, names ...zap.Field) {
	key := what
	for _, f := range names {
		key += "\x00" + f.String
	}
	if d.badPeerNames == nil {
		d.badPeerNames = map[string]bool{}
	}
	if d.badPeerNames[key] || len(d.badPeerNames) > maxBadPeerNames {
		return
	}
	d.badPeerNames[key] = true
	if len(d.badPeerNames) > maxBadPeerNames {
		d.log.Error("invalid names from peers: further ones are not logged", zap.String("in", what))
		return
	}
	fields := append([]zap.Field{zap.String("in", what), zap.Error(err)}, names...)
	if from != "" {
		fields = append(fields, zap.String("from", from))
	}
	d.log.Error("invalid name from a peer refused", fields...)
}
