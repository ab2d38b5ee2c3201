package web

import (
	"bytes"
	"context"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"haven/cli/render"
	"haven/dataset"
)

// pages holds the parsed templates: one set per page, each with the
// layout and the fragments the live stream sends too.
type pages struct {
	sets map[string]*template.Template
	frag *template.Template
}

var funcs = template.FuncMap{
	"tone":   func(s string) string { return "t-" + toneOf(s) },
	"svcURL": func(name string) string { return "/service/" + url.PathEscape(name) },
	"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"stamp":  func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"legend": func() string { l, _, _ := strings.Cut(render.SvcmonLegend, "\nColours"); return l },
	"short":  func(d string) string { return orDashWeb(dataset.ShortDigest(d)) },
}

func mustPages() *pages {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/fragments.html"))
	p := &pages{sets: map[string]*template.Template{}, frag: base}
	for _, name := range []string{"grid", "service", "events", "login"} {
		t := template.Must(base.Clone())
		p.sets[name] = template.Must(t.ParseFS(assets, "assets/page_"+name+".html"))
	}
	return p
}

// write renders page name whole, or a plain error when the template fails.
func (p *pages) write(w http.ResponseWriter, name string, d pageData) {
	var b bytes.Buffer
	if err := p.sets[name].ExecuteTemplate(&b, "layout", d); err != nil {
		http.Error(w, "cannot render the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// fragment renders one fragment (the part of a page the live stream replaces).
func (p *pages) fragment(name string, d any) (string, error) {
	var b bytes.Buffer
	err := p.frag.ExecuteTemplate(&b, name, d)
	return b.String(), err
}

// pageData is what the layout and every page read.
type pageData struct {
	Title string
	View  string // grid, service, events: what the live stream updates
	Name  string // the service of a service page
	After uint64 // the number of the last event on the page
	Live  bool   // the event stream of the daemon is open
	Next  string // login: where to go after
	Err   string
	Body  any // the page's fragment data
	// Events are the page's event rows, newest first.
	Events []numbered
}

// gridData is the grid fragment.
type gridData struct {
	Grid     render.Grid
	Sections []gridSection
	// LeftCols is the number of left cells of every row, Cols of all cells.
	LeftCols, Cols int
	Err            string
}

type gridSection struct {
	Title string
	Rows  []gridRow
	Notes []string
}

// gridRow is a row of the grid as the page shows it: its name (a link to
// the service's page in the Services block), the other left cells padded
// to the block's width, a cell per node.
type gridRow struct {
	Service string
	Name    render.GridCell
	Left    []render.GridCell
	Cells   []nodeCell
}

type nodeCell struct {
	render.GridCell
	Node string
}

// serviceData is the service fragment.
type serviceData struct {
	Name      string
	Found     bool
	Err       string
	Svc       dataset.ServiceStatus
	Grid      gridData // the service's row of the grid
	Instances []instanceRow
	Explain   string
	Log       string
	LogErr    string
	Local     string
}

type instanceRow struct {
	Node      string
	Known     bool
	Inst      dataset.Instance
	Notes     []string
	Resources []resourceRow
}

type resourceRow struct {
	RID   string
	Res   dataset.Resource
	Flags string
}

func (v *View) gridData(r *http.Request) gridData {
	st, err := v.status(r)
	if err != nil {
		return gridData{Err: errText(err)}
	}
	return makeGrid(render.SvcmonGrid(st, nil))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func makeGrid(g render.Grid) gridData {
	// the first header line repeats the page's title: keep its notes
	if len(g.Header) > 0 {
		h := strings.TrimSpace(strings.TrimPrefix(g.Header[0], "Cluster "+orDash(g.Cluster)))
		g.Header = append([]string{strings.TrimSuffix(strings.TrimPrefix(h, "("), ")")}, g.Header[1:]...)
		if g.Header[0] == "" {
			g.Header = g.Header[1:]
		}
	}
	d := gridData{Grid: g, Cols: len(g.Nodes)}
	// one table: the node columns line up across the blocks, as in svcmon
	n := 1
	for _, s := range g.Sections {
		for _, r := range s.Rows {
			n = max(n, len(r.Left))
		}
	}
	d.LeftCols = n
	d.Cols += n
	for _, s := range g.Sections {
		sec := gridSection{Title: s.Title, Notes: s.Notes}
		for _, r := range s.Rows {
			row := gridRow{Service: r.Service}
			if len(r.Left) > 0 {
				row.Name = r.Left[0]
				row.Left = append(row.Left, r.Left[1:]...)
			}
			for len(row.Left) < n-1 {
				row.Left = append(row.Left, render.GridCell{})
			}
			for i, c := range r.Cells {
				row.Cells = append(row.Cells, nodeCell{c, g.Nodes[i]})
			}
			sec.Rows = append(sec.Rows, row)
		}
		d.Sections = append(d.Sections, sec)
	}
	return d
}

func (v *View) serviceData(r *http.Request, name string) serviceData {
	d := serviceData{Name: name}
	st, err := v.status(r)
	if err != nil {
		d.Err = errText(err)
		return d
	}
	if _, ok := st.Services[name]; !ok {
		return d
	}
	d.Found, d.Local = true, st.Local
	// the grid's row of this service, by the grid's own rules
	d.Grid = makeGrid(render.SvcmonGrid(st, func(n string) bool { return n == name }))
	d.Grid.Sections = d.Grid.Sections[len(d.Grid.Sections)-1:]
	d.Grid.Grid.Header = nil
	s := st.Services[name] // as made inert by SvcmonGrid
	d.Svc = s
	d.Instances = instanceRows(s, st.Local, v.session == "")
	if e, err := call(r, func(ctx context.Context) (string, error) {
		e, err := v.opt.Source.Explain(ctx, name, false)
		if err != nil {
			return "", err
		}
		return render.Explain(e), nil
	}); err != nil {
		d.Explain = errText(err)
	} else {
		d.Explain = e
	}
	log, err := call(r, func(ctx context.Context) (string, error) { return v.opt.Source.Logs(ctx, "", name, logLines) })
	if err != nil {
		d.LogErr = errText(err)
	}
	d.Log = strings.TrimRight(log, "\n")
	return d
}

// instanceRows are the service's instances: the local node first, then
// the others and the candidate nodes without data, by name. Without an
// access token (anyone on the host reads the view) the OCF resources show
// their agent only (paramLabel).
func instanceRows(s dataset.ServiceStatus, local string, open bool) []instanceRow {
	nodes := render.TreeNodes(s, local)
	var out []instanceRow
	for _, n := range nodes {
		inst, ok := s.Instances[n]
		row := instanceRow{Node: n, Known: ok, Inst: inst}
		if ok {
			row.Notes = instanceNotes(inst)
			for _, rid := range slices.Sorted(maps.Keys(inst.Resources)) {
				res := inst.Resources[rid]
				if open {
					res.Label = paramLabel(rid, res.Label)
				}
				row.Resources = append(row.Resources, resourceRow{RID: rid, Res: res, Flags: resourceFlags(res)})
			}
		}
		out = append(out, row)
	}
	return out
}

// paramLabel is the label of resource rid in a view without an access
// token: an OCF resource's parameters may hold what only root should read
// (a connection string, a mount option, a cookie the masks do not
// recognise), so their values are left out; the agent stays.
func paramLabel(rid, label string) string {
	if !strings.HasPrefix(rid, "ocf#") || label == "" {
		return label
	}
	agent, _, _ := strings.Cut(label, " ")
	return agent + " (parameters shown with an access token: node.web_token_file)"
}

func instanceNotes(i dataset.Instance) []string {
	var n []string
	if i.Stale {
		if i.AgeMs >= 0 {
			n = append(n, "stale: last heard "+(time.Duration(i.AgeMs)*time.Millisecond).Round(100*time.Millisecond).String()+" ago")
		} else {
			n = append(n, "stale: never heard")
		}
	}
	for _, s := range []string{i.Monitor.Error, i.ConfigError, i.Excluded, i.GaveUp} {
		if s != "" {
			n = append(n, s)
		}
	}
	return n
}

func resourceFlags(r dataset.Resource) string {
	var f []string
	if r.Monitor {
		f = append(f, "monitored")
	}
	if r.Optional {
		f = append(f, "optional")
	}
	if r.Disabled {
		f = append(f, "disabled")
	}
	return strings.Join(f, ", ")
}

// toneOf is the tone of a status word or grid mark (the grid's colours).
func toneOf(s string) string {
	switch {
	case s == "up" || s == "O" || strings.HasPrefix(s, "O"):
		return "ok"
	case s == "down" || strings.HasPrefix(s, "X") || strings.Contains(s, "failed"):
		return "bad"
	case s == "warn" || strings.HasPrefix(s, "!"):
		return "warn"
	case s == "" || s == "n/a" || s == "unknown":
		return "muted"
	}
	return ""
}

func (v *View) gridPage(w http.ResponseWriter, r *http.Request) {
	_, seq := v.hub.since(^uint64(0))
	v.pages.write(w, "grid", pageData{Title: "Cluster", View: "grid", After: seq, Live: v.hub.isLive(), Body: v.gridData(r)})
}

func (v *View) servicePage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	evs, seq := v.hub.since(0)
	d := v.serviceData(r, name)
	if !d.Found && d.Err == "" {
		w.WriteHeader(http.StatusNotFound)
	}
	v.pages.write(w, "service", pageData{Title: name, View: "service", Name: name, After: seq, Live: v.hub.isLive(),
		Body: d, Events: newestFirst(filterService(evs, name))})
}

func (v *View) eventsPage(w http.ResponseWriter, r *http.Request) {
	evs, seq := v.hub.since(0)
	v.pages.write(w, "events", pageData{Title: "Events", View: "events", After: seq, Live: v.hub.isLive(), Events: newestFirst(evs)})
}

func filterService(evs []numbered, name string) []numbered {
	var out []numbered
	for _, e := range evs {
		if e.Service == name {
			out = append(out, e)
		}
	}
	return out
}

func newestFirst(evs []numbered) []numbered {
	out := slices.Clone(evs)
	slices.Reverse(out)
	return out
}

func orDashWeb(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
