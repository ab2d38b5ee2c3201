package arbitrator

import (
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"net"
	"time"
)

// Reporter is a node's side of the wire: it sends its reports to one
// arbitrator and reads the grant of each. Not safe for concurrent use: the
// node reports from one goroutine.
type Reporter struct {
	Addr    string // the arbitrator's HOST:PORT
	Cluster string
	Node    string
	Secret  []byte
	// Inc is this run's incarnation (it only grows over the runs of the
	// node): with Seq, every report is new to the arbitrator.
	Inc uint64
	// Source is the local address to send from ("" lets the kernel pick),
	// e.g. the node's hb.addr on a host with several addresses.
	Source string
	// NodeKey is this node's private key and ArbitratorKey the
	// arbitrator's public key: with both, reports and grants are sealed
	// with their pairwise key; otherwise with the cluster secret alone.
	NodeKey       *ecdh.PrivateKey
	ArbitratorKey *ecdh.PublicKey

	seq  uint64
	keys *keys
}

// sealKeys are the keys of the reporter's frames (derived once).
func (r *Reporter) sealKeys() (keys, error) {
	if r.keys == nil {
		k := keys{secret: r.Secret}
		if r.NodeKey != nil && r.ArbitratorKey != nil {
			var err error
			if k, err = pairKeys(r.Secret, r.NodeKey, r.ArbitratorKey); err != nil {
				return k, err
			}
		}
		r.keys = &k
	}
	return *r.keys, nil
}

// ErrNoAnswer is a report that got no valid grant in time.
var ErrNoAnswer = errors.New("no answer")

// Report sends body and waits for its grant until ctx ends. sent is the
// caller's clock when the report left (quorum.NodeLeaseEnd counts a lease
// from it).
func (r *Reporter) Report(ctx context.Context, body ReportBody, now func() time.Time) (g GrantBody, sent time.Time, err error) {
	r.seq++
	var laddr *net.UDPAddr
	if r.Source != "" {
		if laddr, err = net.ResolveUDPAddr("udp", net.JoinHostPort(r.Source, "0")); err != nil {
			return g, sent, err
		}
	}
	raddr, err := net.ResolveUDPAddr("udp", r.Addr)
	if err != nil {
		return g, sent, err
	}
	conn, err := net.DialUDP("udp", laddr, raddr)
	if err != nil {
		return g, sent, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	k, err := r.sealKeys()
	if err != nil {
		return g, sent, err
	}
	sent = now()
	body.SentUnixMs = time.Now().UnixMilli()
	out, err := seal(k, typeReport, r.Cluster, r.Node, r.Inc, r.seq, body)
	if err != nil {
		return g, sent, err
	}
	if _, err := conn.Write(out); err != nil {
		return g, sent, err
	}
	buf := make([]byte, MaxDatagram+1)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return g, sent, fmt.Errorf("%w: %v", ErrNoAnswer, err)
		}
		h, ct, err := parseHeader(buf[:n])
		if err != nil || h.typ != typeGrant || h.cluster != r.Cluster || h.node != r.Node || h.inc != r.Inc || h.seq != r.seq {
			continue // not the grant of this report (a late one, or noise)
		}
		if err := open(k, h, ct, &g); err != nil {
			continue
		}
		return g, sent, nil
	}
}
