package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// keepAlive is the period of the comment lines that keep an idle stream
// (and the proxies on its way) open.
const keepAlive = 15 * time.Second

// live is the server-sent event stream of a page (GET
// /live?view=grid|service|events[&name=S][&after=N]): "view" messages
// carry the page's fragment, rendered again at each event of the daemon
// and every Options.Every, sent when it changed; "event" messages carry
// one row of the event list (id: the view's run and the event's number,
// so that a reconnecting browser resumes after it with Last-Event-ID); "state" says whether the
// daemon's event stream is open.
func (v *View) live(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	view, name := q.Get("view"), q.Get("name")
	if view != "grid" && view != "service" && view != "events" || view == "service" && name == "" {
		http.Error(w, "view=grid|service|events (name=S for a service)", http.StatusBadRequest)
		return
	}
	after, _ := strconv.ParseUint(q.Get("after"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		// a browser resuming: after its last event, unless that was
		// another run of the view (the daemon restarted: all of this
		// run's events are new to it)
		epoch, n, _ := strings.Cut(id, ":")
		after, _ = strconv.ParseUint(n, 10, 64)
		if epoch != v.epoch {
			after = 0
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	client := clientOf(r)
	if !v.takeClient(client) {
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("too many live pages open by this client (%d): close some", v.opt.MaxStreamsPerClient), http.StatusServiceUnavailable)
		return
	}
	defer v.releaseClient(client)
	select {
	case v.streams <- struct{}{}:
		defer func() { <-v.streams }()
	default:
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("too many live pages open (%d): close some", cap(v.streams)), http.StatusServiceUnavailable)
		return
	}
	wake := v.hub.subscribe()
	defer v.hub.unsubscribe(wake)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()

	tick := time.NewTicker(v.opt.Every)
	defer tick.Stop()
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	last, wasLive := "", !v.hub.isLive()
	for {
		if live := v.hub.isLive(); live != wasLive {
			wasLive = live
			send(w, "state", "", map[bool]string{true: "live", false: "no event stream"}[live])
		}
		evs, _ := v.hub.since(after)
		for _, e := range evs {
			after = e.Seq
			if view == "grid" || view == "service" && e.Service != name {
				continue
			}
			row, err := v.pages.fragment("eventrow", e)
			if err != nil {
				return
			}
			send(w, "event", v.epoch+":"+strconv.FormatUint(e.Seq, 10), row)
		}
		var frag string
		var err error
		switch view {
		case "grid":
			frag, err = v.pages.fragment("grid", v.gridData(r))
		case "service":
			frag, err = v.pages.fragment("service", v.serviceData(r, name))
		}
		if err != nil {
			return
		}
		if frag != last {
			last = frag
			send(w, "view", "", frag)
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-wake:
		case <-tick.C:
		case <-ka.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
	}
}

// takeClient counts a live stream of client, false when it holds its
// share already.
func (v *View) takeClient(client string) bool {
	v.clientMu.Lock()
	defer v.clientMu.Unlock()
	if v.clients[client] >= v.opt.MaxStreamsPerClient {
		return false
	}
	v.clients[client]++
	return true
}

func (v *View) releaseClient(client string) {
	v.clientMu.Lock()
	defer v.clientMu.Unlock()
	if v.clients[client]--; v.clients[client] <= 0 {
		delete(v.clients, client)
	}
}

// send writes one message; each line of data is a data: line (the
// browser joins them with newlines). A carriage return ends a line for
// the browser too: it starts a data: line as well, so that no text of
// the page can start a field of the stream.
var crlf = strings.NewReplacer("\r\n", "\n", "\r", "\n")

func send(w http.ResponseWriter, event, id, data string) {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, l := range strings.Split(crlf.Replace(data), "\n") {
		b.WriteString("data: " + l + "\n")
	}
	b.WriteString("\n")
	w.Write([]byte(b.String()))
}
