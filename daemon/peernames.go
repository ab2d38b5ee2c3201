package daemon

import (
	"go.uber.org/zap"

	"haven/driver"
)

// refusePeerName logs an invalid name received from a peer, refused by
// the driver (once per name; it must not be used: it could name a path
// outside the service directory).
func (d *Daemon) refusePeerName(r driver.RefusedName) {
	if r.Last {
		d.log.Error("invalid names from peers: further ones are not logged", zap.String("in", r.What))
		return
	}
	fields := []zap.Field{zap.String("in", r.What), zap.Error(r.Err), zap.String("svc", r.Svc)}
	if r.Node != "" {
		fields = append(fields, zap.String("node", r.Node))
	}
	if r.From != "" {
		fields = append(fields, zap.String("from", r.From))
	}
	d.log.Error("invalid name from a peer refused", fields...)
}
