package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/resource"
)

// svcmgr -s S pull fetches the images of a service's container resources
// ahead of time on each of its candidate nodes: this node pulls its own,
// and asks each other one through the heartbeat's transport (op pull),
// which pulls with its own engine storage and config (an image reference
// with {nodename} is expanded there), then checks its instance at once,
// so that a node that said `cannot run here` for want of the image is a
// candidate again. A node that cannot be asked says so in the answer.
const opPull = "pull"

// pullAskMargin is added to the pulls' own time limits for the wait of a
// peer's answer.
const pullAskMargin = 5 * time.Second

type pullAsk struct {
	Svc string `json:"svc"`
}

// pullTargets are the images of the enabled container resources of cfg
// as expanded for this node, each one's time limit and its engine.
func (d *Daemon) pullTargets(cfg *config.ServiceConfig) ([]api.PullImage, []time.Duration, []string, error) {
	exp, err := cfg.ForNode(d.node.Name, d.p.ServiceVar(cfg.Name))
	if err != nil {
		return nil, nil, nil, err
	}
	var out []api.PullImage
	var limits []time.Duration
	var engines []string
	for _, r := range exp.Resources {
		if r.Type != config.SectionContainer || r.Disable || r.Image == "" {
			continue
		}
		out = append(out, api.PullImage{RID: r.RID, Image: r.Image})
		limits = append(limits, pullTimeout(r))
		engines = append(engines, r.Engine)
	}
	return out, limits, engines, nil
}

// pullTimeout is the time limit of a resource's pull: its timeout.
func pullTimeout(r config.ResourceConfig) time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 30 * time.Second
}

// pullHere pulls the images of service cfg on this node (off the loop),
// then orders a check of its instance.
func (d *Daemon) pullHere(cfg *config.ServiceConfig) api.PullNode {
	res := api.PullNode{Node: d.node.Name}
	images, limits, engines, err := d.pullTargets(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	for i := range images {
		spec := d.engineSpec(engines[i])
		d.log.Info("pull", zap.String("svc", cfg.Name), zap.String("rid", images[i].RID), zap.String("image", images[i].Image))
		d.svclogs.write(cfg.Name, images[i].RID, "pull: "+images[i].Image+" (svcmgr pull)")
		if err := resource.PullImage(d.actx, spec, images[i].Image, limits[i]); err != nil {
			images[i].Error = err.Error()
			d.svclogs.write(cfg.Name, images[i].RID, "pull: "+err.Error())
		}
	}
	res.Images = images
	d.post(func() {
		if inst := d.services[cfg.Name]; inst != nil && inst.cfg != nil && inst.cfg.HasNode(d.node.Name, d.cluster.NodeNames()) {
			d.check(inst)
		}
	})
	return res
}

// answerPull answers a peer's pull ask (on the loop; the pulls run off it).
func (d *Daemon) answerPull(from string, body []byte, answer func(any, string)) {
	var q pullAsk
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		answer(nil, "malformed request: "+err.Error())
		return
	}
	inst := d.services[q.Svc]
	if inst == nil || inst.cfg == nil {
		answer(nil, "service "+q.Svc+" does not exist on "+d.node.Name)
		return
	}
	if !inst.cfg.HasNode(d.node.Name, d.cluster.NodeNames()) {
		answer(nil, d.node.Name+" is not a node of "+q.Svc)
		return
	}
	cfg := inst.cfg
	d.log.Info("peer asks for a pull", zap.String("peer", from), zap.String("svc", q.Svc))
	go func() { answer(d.pullHere(cfg), "") }()
}

// handlePull answers api.PathPull: every candidate node of the service
// pulls its images, at once; the answer lists each node's pulls.
func (d *Daemon) handlePull(decode func(http.ResponseWriter, *http.Request, any) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req api.PullRequest
		if !decode(w, r, &req) {
			return
		}
		v, err := d.call(func() (any, error) {
			inst, err := d.lookup(req.Name)
			if err != nil {
				return nil, err
			}
			if inst.cfg == nil {
				return nil, failed("%s: no config here", req.Name)
			}
			return inst.cfg, nil
		})
		if err != nil {
			writeErr(w, err)
			return
		}
		cfg := v.(*config.ServiceConfig)
		// the wait of a peer's answer: its pulls' limits, one after the other
		_, limits, _, err := d.pullTargets(cfg)
		if err != nil {
			writeErr(w, badInput(err))
			return
		}
		within := pullAskMargin
		for _, l := range limits {
			within += l
		}
		nodes := cfg.NodeList(d.cluster.NodeNames())
		out := make([]api.PullNode, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if n == d.node.Name {
					out[i] = d.pullHere(cfg)
					return
				}
				out[i] = api.PullNode{Node: n}
				raw, err := d.askPeerWithin(n, opPull, pullAsk{Svc: cfg.Name}, within, "its images cannot be pulled")
				if err == nil {
					var pn api.PullNode
					if err = json.Unmarshal(raw, &pn); err == nil {
						pn.Node = n
						out[i] = pn
					}
				}
				if err != nil {
					out[i].Error = err.Error()
				}
			}()
		}
		wg.Wait()
		writeJSON(w, api.PullResponse{Nodes: out})
	}
}
