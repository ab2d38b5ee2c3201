package daemon

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"haven/arbitrator"
	"haven/config"
	"haven/driver"
	"haven/node"
)

// runProbes probes the arbitrators the core asked for, each in a worker
// bounded by its timeout; the answers go back to the loop.
func (d *Daemon) runProbes(probes []node.Probe) {
	for _, p := range probes {
		var arb *config.Arbitrator
		for i := range d.cluster.Arbitrators {
			if d.cluster.Arbitrators[i].Name == p.Name {
				arb = &d.cluster.Arbitrators[i]
			}
		}
		if arb == nil {
			continue
		}
		if strings.HasPrefix(arb.URI, driver.OneVoteScheme) {
			d.reportOneVote(*arb, p)
			continue
		}
		a, sent := *arb, p.Sent
		d.goWorker(func(ctx context.Context) {
			ok, detail := probeArbitrator(ctx, a)
			d.post(func() {
				d.drv.Step(node.Voted{Arbitrator: a.Name, OK: ok, Detail: detail, Sent: sent, Now: d.clk.Now()})
			})
		})
	}
}

// probeArbitrator asks an arbitrator for its vote: an http(s) GET answered
// 2xx, or a tcp connection accepted, within its timeout.
func probeArbitrator(ctx context.Context, a config.Arbitrator) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	if addr, ok := strings.CutPrefix(a.URI, "tcp://"); ok {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, "tcp " + addr + " accepted"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URI, nil)
	if err != nil {
		return false, err.Error()
	}
	// an arbitrator answers reachability: its certificate is not what is
	// voted on (a self-signed one is common on a witness host)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: a.Timeout}).Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return false, "http " + resp.Status
	}
	return true, "http " + resp.Status
}

// runFences runs the fence command of each lost peer the core asked for,
// in a worker bounded by the stonith timeout; the end goes back to the
// loop (the core logs and emits it).
func (d *Daemon) runFences(fences []node.Fence) {
	for _, f := range fences {
		st, ok := d.cluster.Stonith[f.Node]
		target := f.Node
		if !ok && d.diskFence(target) {
			continue
		}
		if !ok {
			d.post(func() {
				d.drv.Step(node.FenceEnded{Node: target, Err: fmt.Errorf("no [stonith.%s] command", target), Now: d.clk.Now()})
			})
			continue
		}
		d.goWorker(func(ctx context.Context) {
			err := runFence(ctx, st)
			d.post(func() { d.drv.Step(node.FenceEnded{Node: target, Err: err, Now: d.clk.Now()}) })
		})
	}
}

func runFence(ctx context.Context, st config.Stonith) error {
	ctx, cancel := context.WithTimeout(ctx, st.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", st.Command)
	cmd.Env = append(os.Environ(), "HAVEN_FENCE_NODE="+st.Node)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("timed out after %s", st.Timeout)
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// oneVoteClient is this node's wire to one one-vote arbitrator: its
// reporter (the sequence of this run's reports) and whether a report is
// in flight (the next waits for it: reports of a run go in order).
type oneVoteClient struct {
	rep  *arbitrator.Reporter
	busy bool
}

// reportOneVote sends the core's report p to one-vote arbitrator a in a
// worker bounded by a's timeout; the grant (or why none came) goes back
// to the loop. A report still in flight makes this one wait for the next
// period.
func (d *Daemon) reportOneVote(a config.Arbitrator, p node.Probe) {
	if d.oneVote == nil {
		d.oneVote = map[string]*oneVoteClient{}
	}
	cl := d.oneVote[a.Name]
	if cl == nil {
		secret, err := hex.DecodeString(d.cluster.Secret)
		if err != nil {
			return // refused at load: a one-vote arbitrator needs the secret
		}
		src := d.node.HB.Addr
		if ip := net.ParseIP(src); ip == nil || ip.IsUnspecified() {
			src = ""
		}
		cl = &oneVoteClient{rep: &arbitrator.Reporter{Addr: strings.TrimPrefix(a.URI, driver.OneVoteScheme), Cluster: d.cluster.Name,
			Node: d.node.Name, Secret: secret, Inc: d.dur.Incarnation, Source: src}}
		if pub := d.keys.arbs[a.Name]; pub != nil {
			cl.rep.NodeKey, cl.rep.ArbitratorKey = d.keys.priv, pub
		}
		d.oneVote[a.Name] = cl
	}
	if cl.busy {
		return
	}
	cl.busy = true
	name, timeout := a.Name, a.Timeout
	d.goWorker(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		g, sent, err := cl.rep.Report(ctx, arbitrator.ReportBody{Partition: p.Partition, Running: p.Running}, d.clk.Now)
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		d.post(func() {
			cl.busy = false
			d.drv.Step(node.Granted{Arbitrator: name, Grant: g, ErrText: errText, Sent: sent, Now: d.clk.Now()})
		})
	})
}
