package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/node"
	"haven/resource"
)

// apiError carries the exit status the CLI should use.
type apiError struct {
	status int // 1 or 2
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func failed(format string, a ...any) error { return &apiError{1, fmt.Sprintf(format, a...)} }
func badInput(err error) error             { return &apiError{2, err.Error()} }

func (d *Daemon) routes() http.Handler {
	lim := newAPILimits(d.clk)
	decode := lim.decode
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		d.replyRead(w, func() (any, error) { return d.clusterStatus(), nil })
	})
	mux.HandleFunc("GET "+api.PathDaemonStatus, func(w http.ResponseWriter, r *http.Request) {
		d.replyRead(w, func() (any, error) { return d.daemonStatus(), nil })
	})
	mux.HandleFunc("POST "+api.PathDaemonStop, func(w http.ResponseWriter, r *http.Request) {
		var req api.StopRequest
		if !decode(w, r, &req) {
			return
		}
		if req.Mode != "stop" && req.Mode != "shutdown" {
			writeErr(w, badInput(fmt.Errorf("unknown stop mode %q (stop | shutdown)", req.Mode)))
			return
		}
		d.RequestStop(req.Mode)
		writeJSON(w, map[string]string{"result": "stopping"})
	})
	mux.HandleFunc("POST "+api.PathNodeAction, func(w http.ResponseWriter, r *http.Request) {
		var req api.NodeActionRequest
		if !decode(w, r, &req) {
			return
		}
		d.replyAnswer(w, func(done func(any, error)) { d.nodeAction(req.Action, done) })
	})
	mux.HandleFunc("GET "+api.PathServices, func(w http.ResponseWriter, r *http.Request) {
		d.replyRead(w, func() (any, error) { return d.serviceList(), nil })
	})
	mux.HandleFunc("POST "+api.PathCreate, func(w http.ResponseWriter, r *http.Request) {
		var req api.CreateRequest
		if !decode(w, r, &req) {
			return
		}
		// parsed here, off the event loop
		cfg, warns, err := d.parseCreate(req)
		if err != nil {
			writeErr(w, err)
			return
		}
		d.replyAsync(w, func(done func(any, error)) {
			d.whenConfigIdle(req.Name, func() { d.create(req, cfg, warns, done) })
		})
	})
	mux.HandleFunc("POST "+api.PathServiceAction, func(w http.ResponseWriter, r *http.Request) {
		var req api.ActionRequest
		if !decode(w, r, &req) {
			return
		}
		d.replyAnswer(w, func(done func(any, error)) { d.serviceAction(req, done) })
	})
	mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		v, err := d.call(func() (any, error) {
			return d.configRaw(name)
		})
		if err != nil {
			writeErr(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(v.([]byte))
	})
	mux.HandleFunc("POST "+api.PathKeyword, func(w http.ResponseWriter, r *http.Request) {
		var req api.KeywordRequest
		if !decode(w, r, &req) {
			return
		}
		// the agents a set adds, asked off the loop (ocfagents.go)
		pre, err := d.precheckKeyword(req)
		if err != nil {
			writeErr(w, err)
			return
		}
		d.replyAsync(w, func(done func(any, error)) {
			d.whenConfigIdle(req.Name, func() { d.keyword(req, pre, done) })
		})
	})
	mux.HandleFunc("GET "+api.PathExplain, d.handleExplain)
	mux.HandleFunc("POST "+api.PathRefresh, d.handleRefresh(decode))
	mux.HandleFunc("POST "+api.PathPull, d.handlePull(decode))
	mux.HandleFunc("GET "+api.PathLogs, lim.stream(d.handleLogs))
	mux.HandleFunc("GET "+api.PathEvents, lim.stream(d.handleEvents))
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	st, code := 1, http.StatusConflict
	var ae *apiError
	if errors.As(err, &ae) && ae.status == 2 {
		st, code = 2, http.StatusBadRequest
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		st, code = 2, http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(api.Error{Error: err.Error(), Status: st})
}

// replyRead runs f, which changes nothing, on the loop and writes its
// result at once: reads never wait for (or fail with) a state write.
func (d *Daemon) replyRead(w http.ResponseWriter, f func() (any, error)) {
	v, err := d.call(f)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, v)
}

// replyAsync runs start on the loop; start calls done (on the loop) when
// the work it began has ended. The answer is written once the state is on
// disk (the core answers once it is, or with the error of a roll back
// since the call began).
func (d *Daemon) replyAsync(w http.ResponseWriter, start func(done func(any, error))) {
	d.replyAnswer(w, func(done func(any, error)) {
		from := d.core.PersistSeq()
		start(func(v any, err error) {
			if err != nil {
				done(v, err)
				return
			}
			d.drv.Ask(node.Barrier{From: from}, func(a node.Answer) { done(v, answerErr(a)) })
		})
	})
}

// replyAnswer runs start on the loop and writes the result start gives
// done. The admin actions use it directly: the core holds their answer
// until what it rests on is on disk (node/persist.go), so it is written
// as it comes, through one ticket.
func (d *Daemon) replyAnswer(w http.ResponseWriter, start func(done func(any, error))) {
	type res struct {
		v   any
		err error
	}
	ch := make(chan res, 1)
	if !d.post(func() { start(func(v any, err error) { ch <- res{v, err} }) }) {
		writeErr(w, errors.New("the daemon is stopping"))
		return
	}
	select {
	case r := <-ch:
		if r.err != nil {
			writeErr(w, r.err)
			return
		}
		if r.v == nil {
			r.v = api.ActionResponse{Result: "ok"}
		}
		writeJSON(w, r.v)
	case <-d.quit:
		writeErr(w, errors.New("the daemon stopped before the action ended"))
	}
}

func (d *Daemon) lookup(name string) (*instance, error) {
	inst, ok := d.services[name]
	if !ok {
		if bad := d.cfgs.invalid[name]; bad != nil {
			return nil, failed("%s: config invalid: %s (repair it with svcmgr edit config or create --replace)", name, bad.err)
		}
		return nil, failed("service %s does not exist", name)
	}
	return inst, nil
}

// configRaw is the installed config text of a service, also when it does
// not parse (so that edit config can repair it).
func (d *Daemon) configRaw(name string) ([]byte, error) {
	if bad := d.cfgs.invalid[name]; bad != nil {
		return bad.raw, nil
	}
	inst, err := d.lookup(name)
	if err != nil {
		return nil, err
	}
	return inst.cfg.Raw, nil
}

// nodeName is safe to call from any goroutine (the node config is set
// before the loop starts and never replaced).
func (d *Daemon) nodeName() string { return d.node.Name }

func (d *Daemon) daemonStatus() *api.DaemonStatus {
	now := d.clk.Now()
	ds := &api.DaemonStatus{
		Node:              d.node.Name,
		Pid:               os.Getpid(),
		Started:           d.started,
		Uptime:            now.Sub(d.started).Round(time.Second).String(),
		Compat:            d.opts.Compat,
		Monitor:           string(d.core.NodeMonitor()),
		Frozen:            d.core.NodeFrozen(),
		FrozenReason:      d.core.State().NodeFrozenReason,
		SplitFrozen:       d.core.SplitFrozen(),
		SplitFrozenReason: d.core.State().SplitFrozenReason,
		ConfDiffers:       d.core.ConfDiffers(),
		ConfUnchecked:     d.core.ConfUnchecked(),
		Passes:            d.drv.Passes(),
		Checks:            d.drv.Checks(),
		Quiet:             d.drv.Quiet(),
		Gen:               d.drv.Gen(),
		StateFailedWrites: d.ps.failures,
		HB: api.HBStatus{
			Addr:     fmt.Sprintf("%s:%d", d.node.HB.Addr, d.node.HB.Port),
			Timeout:  d.node.HB.Timeout.String(),
			Interval: d.node.HB.Interval.String(),
		},
	}
	// several links: each binds its own address of this node's [nodes]
	// entry, not hb.addr (the wildcard, most often)
	for _, m := range d.cluster.Nodes {
		if l := m.LinkAddrs(); m.Name == d.node.Name && len(l) > 1 {
			ds.HB.Addr, ds.HB.Links = l[0], l
		}
	}
	if d.ps.err != nil {
		ds.StateError, ds.StateErrorSince = d.ps.err.Error(), d.ps.failSince
	}
	ds.Disk = d.diskStatus(now) // diskstatus.go
	ds.Guard = d.guardStatus()  // guard.go
	d.upgradeStatus(ds)
	if d.hb == nil {
		return ds
	}
	ds.HB.Listening = true
	for _, hp := range d.hb.Peers() {
		ps := api.PeerStatus{Name: hp.Name, Addr: hp.Addr, LastHeard: hp.LastHeard, Gen: hp.Gen, Status: string(dataset.NodeStUnknown),
			Stale: hp.Stale, Duplicate: hp.Duplicate, Links: apiLinks(hp.Links)}
		if _, ok := d.core.Peer(hp.Name); ok {
			ps.Status = string(d.peerStatus(hp.Name))
		}
		ds.Peers = append(ds.Peers, ps)
	}
	s := d.hb.Stats()
	ds.HB.Sent, ds.HB.Received = s.Sent, s.Received
	ds.HB.FullsSent, ds.HB.DeltasSent, ds.HB.NeedsSent = s.FullsSent, s.DeltasSent, s.NeedsSent
	ds.HB.Rejected, ds.HB.Dropped, ds.HB.SendErrors = s.Rejected, s.Dropped, s.SendErrors
	ds.HB.NotOwnKey = s.NotOwnKey
	ds.HB.ProbesSent, ds.HB.ProbesAnswered = s.ProbesSent, s.ProbesAnswered
	ds.HB.Stalls, ds.HB.StalledMS = s.Stalls, s.Stalled.Milliseconds()
	return ds
}

func (d *Daemon) serviceList() []api.ServiceEntry {
	st := d.clusterStatus()
	var out []api.ServiceEntry
	for _, name := range sortedKeys(st.Services) {
		s := st.Services[name]
		out = append(out, api.ServiceEntry{Name: name, Avail: s.Avail, Overall: s.Overall, Nodes: s.Nodes, ConfigError: s.ConfigError})
	}
	return out
}

// parseCreate parses the config of a create request, and returns the
// warnings of what req.Force let through. It runs on the API handler's
// goroutine, not on the loop: a large or hostile config never holds the
// loop.
func (d *Daemon) parseCreate(req api.CreateRequest) (*config.ServiceConfig, []*config.Error, error) {
	file := req.File
	if file == "" {
		file = req.Name + ".toml"
	}
	if err := config.ValidServiceName(req.Name); err != nil {
		return nil, nil, badInput(err)
	}
	raw := []byte(req.Config)
	cfg, err := tomlfile.ParseService(file, req.Name, raw)
	if err != nil {
		return nil, nil, err
	}
	if err := d.sigs().Check(cfg); err != nil {
		return nil, nil, badInput(err)
	}
	if len(cfg.Nodes) == 0 && d.sigs().On() {
		return nil, nil, badInput(&config.Error{File: file, Key: "DEFAULT.nodes", Msg: "empty: a signed config names its nodes (the daemon cannot add this node to a signed text)"})
	}
	if len(cfg.Nodes) == 0 {
		if raw, err = tomlfile.SetKeyword(file, raw, "DEFAULT.nodes+="+d.nodeName()); err != nil {
			return nil, nil, err
		}
		if cfg, err = tomlfile.ParseService(file, req.Name, raw); err != nil {
			return nil, nil, err
		}
	}
	// the [ocf.NAME] parameters, against the agents' meta-data here
	if _, err := resource.CheckOCF(context.Background(), cfg, d.node.OCFRoot); err != nil {
		return nil, nil, err
	}
	// an agent none of the service's nodes has (ocfagents.go)
	nowhere := d.agentsNowhere(cfg, nil, req.Force)
	if len(nowhere) > 0 && !req.Force {
		return nil, nil, nowhere[0]
	}
	return cfg, nowhere, nil
}

// create installs a new service config (or replaces one with Replace),
// and answers done once the live peers hold it. cfg is req's config,
// parsed by parseCreate off the loop. A replace with Base (the digest of
// the config the editor read) is refused if the config changed since:
// compare-and-swap.
func (d *Daemon) create(req api.CreateRequest, cfg *config.ServiceConfig, warns []*config.Error, done func(any, error)) {
	_, exists := d.services[req.Name]
	if exists && !req.Replace {
		done(nil, badInput(fmt.Errorf("service %s already exists (use set or edit config to change it)", req.Name)))
		return
	}
	bad := d.cfgs.invalid[req.Name]
	if bad != nil && !req.Replace {
		done(nil, badInput(fmt.Errorf("service %s already exists, its config invalid: %s (repair it with edit config or create --replace)", req.Name, bad.err)))
		return
	}
	if req.Base != "" {
		cur, err := d.configRaw(req.Name)
		if err != nil || dataset.ConfigDigest(cur) != req.Base {
			v := d.core.KnownConfig(req.Name).Version
			done(nil, failed("%s: changed concurrently (now version %d from %s) since the config was read: nothing installed, retry", req.Name, v.Counter, v.Origin))
			return
		}
	}
	if err := d.checkServiceNodes(cfg); err != nil {
		done(nil, err)
		return
	}
	refWarns, err := d.checkServiceRefs(cfg, req.Force)
	if err != nil {
		done(nil, err)
		return
	}
	warns = append(refWarns, warns...)
	what := "created"
	if exists || bad != nil {
		what = "replaced"
	}
	d.editConfig(node.ConfigRequest{Service: req.Name, Config: cfg, What: what}, func(a node.Answer) {
		if err := answerErr(a); err != nil {
			done(nil, err)
			return
		}
		done(api.ConfigResponse{Result: "ok", Warnings: d.logWarnings(req.Name, warns)}, nil)
	})
}

// agentsUnasked refuses a set whose new config cfg brings an agent that
// precheckKeyword did not ask about (asked): the config changed between
// the two (another edit), so the answer would rest on nothing.
func (d *Daemon) agentsUnasked(svc string, prev, cfg *config.ServiceConfig, asked map[string]bool) error {
	had := ocfAgentsOf(prev)
	for a := range ocfAgentsOf(cfg) {
		if _, ok := had[a]; !ok && !asked[a] {
			return failed("%s: changed concurrently while its OCF agents were checked: nothing changed, retry", svc)
		}
	}
	return nil
}

// logWarnings logs what a create or set --force installed anyway, and
// returns it for the answer.
func (d *Daemon) logWarnings(svc string, warns []*config.Error) []string {
	var out []string
	for _, w := range warns {
		d.log.Warn("config installed with --force: "+w.Error(), zap.String("svc", svc))
		out = append(out, w.Error())
	}
	return out
}

// editConfig hands an edit made here to the node core, which installs it
// (applyConfigs) and answers once the state is written and the live peers
// hold it.
func (d *Daemon) editConfig(req node.ConfigRequest, done func(node.Answer)) {
	d.drv.EditConfig(req, done)
}

// keywordCheck is what precheckKeyword found of a set: the agents it
// asked about (those the edit adds), and the warnings of what req.Force
// let through.
type keywordCheck struct {
	asked map[string]bool
	warns []*config.Error
}

// precheckKeyword asks, off the loop, whether the OCF agents a set or add
// brings into the config are installed on any of the service's nodes
// (agentsNowhere): an agent on none of them is refused as at create, or
// with Force a warning. The agents the installed config already names are
// not asked again. An edit that cannot be made is left to keyword, which
// says why.
func (d *Daemon) precheckKeyword(req api.KeywordRequest) (keywordCheck, error) {
	var pre keywordCheck
	if req.Op != "set" && req.Op != "add" {
		return pre, nil
	}
	type cur struct {
		raw    []byte
		agents map[string]string
	}
	v, err := d.call(func() (any, error) {
		inst, err := d.lookup(req.Name)
		if err != nil {
			return nil, err
		}
		return cur{raw: inst.cfg.Raw, agents: ocfAgentsOf(inst.cfg)}, nil
	})
	if err != nil {
		return pre, nil
	}
	c := v.(cur)
	codec := tomlfile.ServiceCodec{File: d.p.ServiceConf}
	raw, err := codec.EditService(req.Name, c.raw, req.Op, req.Kws)
	if err != nil {
		return pre, nil
	}
	cfg, err := codec.ParseService(req.Name, raw)
	if err != nil {
		return pre, nil
	}
	held := func(a string) bool { _, ok := c.agents[a]; return ok }
	pre.asked = map[string]bool{}
	for a := range ocfAgentsOf(cfg) {
		if !held(a) {
			pre.asked[a] = true
		}
	}
	pre.warns = d.agentsNowhere(cfg, held, req.Force)
	if len(pre.warns) > 0 && !req.Force {
		return pre, pre.warns[0]
	}
	return pre, nil
}

// keyword gets, sets or unsets keywords. A change is installed here at
// once and answered once the live peers hold it (node/configs.go). pre
// is what precheckKeyword found of a set, off the loop.
func (d *Daemon) keyword(req api.KeywordRequest, pre keywordCheck, done func(any, error)) {
	inst, err := d.lookup(req.Name)
	if err != nil {
		done(nil, err)
		return
	}
	raw := inst.cfg.Raw
	file := d.p.ServiceConf(req.Name)
	switch req.Op {
	case "get":
		var out api.KeywordResponse
		for _, k := range req.Kws {
			v, err := tomlfile.GetKeyword(file, raw, k)
			if err != nil {
				done(nil, badInput(err))
				return
			}
			out.Values = append(out.Values, v)
		}
		done(out, nil)
		return
	case "set", "add", "unset":
		if err := d.keywordNeedsSignature(req.Op); err != nil {
			done(nil, err)
			return
		}
		codec := tomlfile.ServiceCodec{File: d.p.ServiceConf}
		if raw, err = codec.EditService(req.Name, raw, req.Op, req.Kws); err != nil {
			done(nil, badInput(err))
			return
		}
		cfg, err := codec.ParseService(req.Name, raw)
		if err == nil {
			err = d.checkServiceNodes(cfg)
		}
		var warns []*config.Error
		if err == nil {
			warns, err = d.checkServiceRefs(cfg, req.Force)
		}
		if err == nil {
			err = d.agentsUnasked(req.Name, inst.cfg, cfg, pre.asked)
		}
		if err != nil {
			done(nil, err)
			return
		}
		warns = append(warns, pre.warns...)
		d.editConfig(node.ConfigRequest{Service: req.Name, Config: cfg, What: "changed", Op: req.Op, Kws: req.Kws}, func(a node.Answer) {
			if err := answerErr(a); err != nil {
				done(nil, err)
				return
			}
			done(api.KeywordResponse{Warnings: d.logWarnings(req.Name, warns)}, nil)
		})
		return
	}
	done(nil, badInput(fmt.Errorf("unknown keyword operation %q", req.Op)))
}

func (d *Daemon) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	if _, err := d.call(func() (any, error) { return d.lookup(name) }); err != nil {
		writeErr(w, err)
		return
	}
	n := -1 // every line when not asked
	if v := q.Get("lines"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			writeErr(w, badInput(fmt.Errorf("lines=%q: want a number >= 0", v)))
			return
		}
	}
	if peer := q.Get("node"); peer != "" && peer != d.node.Name {
		if q.Get("follow") != "" {
			writeErr(w, badInput(fmt.Errorf("--follow reads this node's log only; without it, --node %s reads the last lines of %s's", peer, peer)))
			return
		}
		raw, err := d.askPeer(peer, opSvcLog, svcLogAsk{Svc: name, Lines: n})
		var text string
		if err == nil {
			err = json.Unmarshal(raw, &text)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, text)
		return
	}
	b, off, err := d.svclogs.tail(name, n)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(b)
	if q.Get("follow") == "" {
		return
	}
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	done := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
		case <-d.quit:
		}
		close(done)
	}()
	d.svclogs.follow(name, off, w, flush, done)
}

func (d *Daemon) handleEvents(w http.ResponseWriter, r *http.Request) {
	ch := d.bus.subscribe()
	defer d.bus.unsubscribe(ch)
	w.Header().Set("Content-Type", "application/x-ndjson")
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	// a first event tells the client the stream is live
	// (node.StreamStarted)
	var live node.StreamStarted
	enc.Encode(api.Event{Time: d.clk.Now(), Kind: live.Kind(), Node: d.nodeName(), Message: live.String()})
	if fl != nil {
		fl.Flush()
	}
	for {
		select {
		case e := <-ch:
			if enc.Encode(e) != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		case <-r.Context().Done():
			return
		case <-d.quit:
			return
		}
	}
}
