package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/monitor"
)

// fakeSource is the daemon's local API as the view reads it: a status
// object, an explanation, log lines and an event stream fed by the test.
type fakeSource struct {
	mu     sync.Mutex
	st     dataset.ClusterStatus
	log    string
	events chan api.Event
}

func (f *fakeSource) Status(ctx context.Context) (*dataset.ClusterStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// a deep copy, as a JSON answer is
	b, _ := json.Marshal(f.st)
	var st dataset.ClusterStatus
	json.Unmarshal(b, &st)
	return &st, nil
}

func (f *fakeSource) Explain(ctx context.Context, name string, start bool) (*api.Explanation, error) {
	return &api.Explanation{Service: name, Local: "n1", Orchestrate: "ha", Policy: "nodes order", Leader: "n1",
		Monitor: &monitor.LocalMonitor{State: dataset.Idle}}, nil
}

func (f *fakeSource) Logs(ctx context.Context, node, name string, lines int) (string, error) {
	return f.log, nil
}

func (f *fakeSource) Stream(ctx context.Context, path string, q url.Values, fn func([]byte) error) error {
	b, _ := json.Marshal(api.Event{Kind: "stream", Node: "n1"})
	fn(b)
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-f.events:
			b, _ := json.Marshal(e)
			if err := fn(b); err != nil {
				return err
			}
		}
	}
}

func (f *fakeSource) set(fn func(st *dataset.ClusterStatus)) {
	f.mu.Lock()
	fn(&f.st)
	f.mu.Unlock()
}

const (
	evil      = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	secret    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	testToken = "tok-3f9a1c0b7d2e4a65"
)

// cluster is a status with peer-provided text that is HTML: a frozen
// reason, a resource's label and last line, a log line.
func cluster() *fakeSource {
	return &fakeSource{
		st: dataset.ClusterStatus{
			Cluster: dataset.ClusterInfo{Name: "prod", Compat: true},
			Local:   "n1",
			Nodes: map[string]dataset.NodeInfo{
				"n1": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1},
				"n2": {Status: dataset.NodeUp, Monitor: dataset.NodeIdle, Compat: 1, Frozen: true, FrozenReason: "frozen by " + evil},
			},
			Services: map[string]dataset.ServiceStatus{
				"web": {Avail: dataset.StatusUp, Overall: dataset.StatusUp, Orchestrate: "ha", Nodes: []string{"n1", "n2"},
					Instances: map[string]dataset.Instance{
						"n1": {Avail: dataset.StatusUp, Overall: dataset.StatusUp, PlacementLeader: true, Monitor: dataset.InstanceMonitor{State: dataset.Idle},
							Resources: map[string]dataset.Resource{"app#main": {Status: dataset.StatusUp, Label: evil, Log: "started " + evil, Monitor: true}}},
						"n2": {Avail: dataset.StatusDown, Overall: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle}},
					}},
			},
		},
		log:    "12:00:00 start " + evil + "\n",
		events: make(chan api.Event, 16),
	}
}

func serve(t *testing.T, opt Options) (*httptest.Server, *fakeSource) {
	t.Helper()
	src := cluster()
	if opt.Source == nil {
		opt.Source = src
	}
	opt.Every = 50 * time.Millisecond
	v := New(opt)
	ctx, cancel := context.WithCancel(context.Background())
	go v.Run(ctx)
	s := httptest.NewServer(v.Handler())
	t.Cleanup(func() { s.Close(); cancel() })
	return s, src
}

func get(t *testing.T, u string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	// a stream served where a refusal is due ends with the timeout
	c := &http.Client{Timeout: 3 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// inlineCode is an element with an event handler or a style attribute.
var inlineCode = regexp.MustCompile(`<[^>]*\s(on[a-z]+|style)=`)

var pagePaths = []string{"/", "/service/web", "/events", "/static/app.js", "/static/style.css"}

// Every page: HTML from peers shows as text, never as markup; the
// security headers are there; no CORS header.
func TestPagesEscapePeerTextAndSetCSP(t *testing.T) {
	s, src := serve(t, Options{})
	src.events <- api.Event{Kind: "node_frozen", Node: "n2", Service: "web", Message: "frozen: " + evil}
	waitFor(t, "the event reaches the view", func() bool {
		_, body := get(t, s.URL+"/events")
		return strings.Contains(body, "node_frozen")
	})
	for _, p := range pagePaths {
		resp, body := get(t, s.URL+p)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP %q allows inline code", p, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", p, resp.Header)
		}
		for k := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("GET %s: CORS header %s", p, k)
			}
		}
		if strings.HasPrefix(p, "/static/") {
			continue
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("GET %s: peer-provided HTML served as markup:\n%s", p, body)
		}
		// one script, from a file; nothing inline
		if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script src="/static/app.js" defer></script>`) {
			t.Errorf("GET %s: scripts other than /static/app.js:\n%s", p, body)
		}
		if inlineCode.MatchString(body) {
			t.Errorf("GET %s: inline handler or style", p)
		}
	}
	_, grid := get(t, s.URL+"/")
	if !strings.Contains(grid, "n2 frozen: frozen by &lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the frozen reason is not shown as text:\n%s", grid)
	}
	_, svc := get(t, s.URL+"/service/web")
	if !strings.Contains(svc, "started &lt;script&gt;") || !strings.Contains(svc, "12:00:00 start &lt;script&gt;") {
		t.Errorf("the resource's last line or the log line not shown as text:\n%s", svc)
	}
}

// A service name that is HTML (a peer's config, a crafted URL) is text
// too, in the page and in its links.
func TestServiceNameIsText(t *testing.T) {
	s, src := serve(t, Options{})
	name := `x"><svg onload=alert(1)>`
	src.set(func(st *dataset.ClusterStatus) { st.Services[name] = st.Services["web"] })
	_, grid := get(t, s.URL+"/")
	if strings.Contains(grid, "<svg") {
		t.Fatalf("service name served as markup:\n%s", grid)
	}
	resp, body := get(t, s.URL+"/service/"+url.PathEscape(name))
	if resp.StatusCode != 200 || strings.Contains(body, "<svg") || !strings.Contains(body, "&lt;svg onload=alert(1)&gt;") {
		t.Fatalf("GET the service page: %d\n%s", resp.StatusCode, body)
	}
	resp, body = get(t, s.URL+"/service/"+url.PathEscape("<b>none</b>"))
	if resp.StatusCode != 404 || strings.Contains(body, "<b>") {
		t.Fatalf("unknown service: %d\n%s", resp.StatusCode, body)
	}
}

// Another site's page cannot read the view or its stream: its requests
// carry Sec-Fetch-Site cross-site (or same-site) or a foreign Origin.
func TestCrossOriginRefused(t *testing.T) {
	s, _ := serve(t, Options{})
	for _, p := range []string{"/", "/service/web", "/events", "/live?view=grid", "/static/app.js"} {
		for _, h := range [][]string{
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"},
			{"Origin", "http://evil.example"},
			{"Origin", "null"},
		} {
			resp, body := get(t, s.URL+p, h...)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("GET %s with %s: %d %s", p, h, resp.StatusCode, body)
			}
		}
		// the view's own page and a typed address are served
		for _, h := range [][]string{{"Sec-Fetch-Site", "same-origin", "Origin", s.URL}, {"Sec-Fetch-Site", "none"}} {
			if p == "/live?view=grid" {
				continue
			}
			if resp, body := get(t, s.URL+p, h...); resp.StatusCode != 200 {
				t.Errorf("GET %s with %s: %d %s", p, h, resp.StatusCode, body)
			}
		}
	}
	// DNS rebinding: a name pointed at the loopback by another site
	resp, _ := get(t, s.URL+"/", "Host", "evil.example:8080")
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host evil.example without a token: %d, want 421", resp.StatusCode)
	}
	// no action: the view answers GET only
	r, err := http.Post(s.URL+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", r.StatusCode)
	}
}

// With a token (what a non-loopback address needs), every page asks for
// it; the login form sets a cookie that is not the token; the token is
// never served back.
func TestTokenRequired(t *testing.T) {
	s, _ := serve(t, Options{Token: testToken})
	for _, p := range []string{"/", "/service/web", "/events"} {
		resp, _ := get(t, s.URL+p)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
			t.Errorf("GET %s without the token: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp, _ := get(t, s.URL+"/live?view=grid"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /live without the token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, s.URL+"/", "Authorization", "Bearer wrong-token-0000000"); resp.StatusCode == 200 {
		t.Error("a wrong bearer token was accepted")
	}
	if resp, body := get(t, s.URL+"/", "Authorization", "Bearer "+testToken); resp.StatusCode != 200 || !strings.Contains(body, "Cluster prod") {
		t.Errorf("GET / with the bearer token: %d", resp.StatusCode)
	}
	// the login form: a wrong token is refused, the right one sets the cookie
	post := func(tok string) *http.Response {
		req, _ := http.NewRequest("POST", s.URL+"/login", strings.NewReader(url.Values{"token": {tok}, "next": {"/events"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", s.URL)
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("nope"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("login with a wrong token: %d %v", resp.StatusCode, resp.Cookies())
	}
	resp := post(testToken)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/events" || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %s %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if ck.Value == testToken || strings.Contains(ck.Value, testToken) || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie %+v", ck)
	}
	for _, p := range pagePaths {
		resp, body := get(t, s.URL+p, "Cookie", ck.Name+"="+ck.Value)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s with the cookie: %d", p, resp.StatusCode)
		}
		if strings.Contains(body, testToken) {
			t.Errorf("GET %s serves the token", p)
		}
	}
	// a login form posted by another site
	req, _ := http.NewRequest("POST", s.URL+"/login", strings.NewReader("token="+testToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site login: %d", r.StatusCode)
	}
	// the login page never sends the browser to another site
	if localPath("//evil.example/x") != "/" || localPath("https://evil.example") != "/" || localPath("/service/web") != "/service/web" {
		t.Error("localPath")
	}
}

// No secret in any page: the status object holds none, and the view adds
// none (the cluster secret, the token).
func TestNoSecretServed(t *testing.T) {
	s, src := serve(t, Options{Token: testToken})
	src.log = "secret? no\n"
	for _, p := range pagePaths {
		_, body := get(t, s.URL+p, "Authorization", "Bearer "+testToken)
		for _, x := range []string{secret, testToken} {
			if strings.Contains(body, x) {
				t.Errorf("GET %s serves a secret", p)
			}
		}
	}
}

// The live stream sends the grid again when the status changes, and the
// events as they come, each once.
func TestLiveStream(t *testing.T) {
	s, src := serve(t, Options{})
	// a stream that never sends what is awaited ends with the timeout
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(s.URL + "/live?view=events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	src.events <- api.Event{Kind: "failover", Node: "n2", Service: "web", Message: "failover: started here\r\nevent: view"}
	msgs := readSSE(t, resp.Body, func(m sseMsg) bool { return m.event == "event" })
	last := msgs[len(msgs)-1]
	if !strings.Contains(last.data, "failover") || !strings.HasSuffix(last.id, ":1") {
		t.Fatalf("event message %+v", last)
	}
	for _, m := range msgs {
		if m.event == "view" {
			t.Fatalf("a carriage return in an event started a field of the stream: %+v", msgs)
		}
	}

	g, err := c.Get(s.URL + "/live?view=grid")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Body.Close()
	readSSE(t, g.Body, func(m sseMsg) bool { return m.event == "view" && strings.Contains(m.data, `data-service="web"`) })
	src.set(func(st *dataset.ClusterStatus) {
		s := st.Services["web"]
		s.Instances["n2"] = dataset.Instance{Avail: dataset.StatusUp, PlacementLeader: true}
		st.Services["web"] = s
	})
	readSSE(t, g.Body, func(m sseMsg) bool { return m.event == "view" && strings.Contains(m.data, `data-node="n2">O^</td>`) })
}

type sseMsg struct{ event, id, data string }

var readers sync.Map // body -> *bufio.Reader

// readSSE reads messages until one satisfies until (or 5 s pass, checked
// at each line; the client's timeout ends a silent stream).
func readSSE(t *testing.T, body io.Reader, until func(sseMsg) bool) []sseMsg {
	t.Helper()
	br, _ := readers.LoadOrStore(body, bufio.NewReader(body))
	r := br.(*bufio.Reader)
	var out []sseMsg
	done := make(chan struct{})
	timer := time.AfterFunc(5*time.Second, func() { close(done) })
	defer timer.Stop()
	var m sseMsg
	for {
		select {
		case <-done:
			t.Fatalf("no such message in 5 s; got %+v", out)
		default:
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v (got %+v)", err, out)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if m.event != "" {
				out = append(out, m)
				if until(m) {
					return out
				}
			}
			m = sseMsg{}
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			if m.data != "" {
				m.data += "\n"
			}
			m.data += line[6:]
		case strings.HasPrefix(line, "data:") || strings.HasPrefix(line, "event:"):
			t.Fatalf("malformed line %q", line)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The live pages are bounded: past MaxStreams a new one is refused with
// 503 at once (the pages themselves still load), and a closed one frees
// its slot.
func TestLiveStreamsBounded(t *testing.T) {
	s, _ := serve(t, Options{MaxStreams: 2, MaxStreamsPerClient: 3})
	c := &http.Client{Timeout: 10 * time.Second}
	var open []*http.Response
	for range 2 {
		resp, err := c.Get(s.URL + "/live?view=grid")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", err, resp)
		}
		open = append(open, resp)
	}
	resp, body := get(t, s.URL+"/live?view=grid")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "too many live pages open (2)") {
		t.Fatalf("a third stream: %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, s.URL+"/"); resp.StatusCode != 200 {
		t.Fatalf("a page with every stream open: %d", resp.StatusCode)
	}
	open[0].Body.Close()
	waitFor(t, "a slot freed by a closed stream", func() bool {
		r, err := c.Get(s.URL + "/live?view=grid")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
	open[1].Body.Close()
}

// A browser that reconnects (Last-Event-ID) gets the events after its
// last one; after a restart of the view (another run's id), all of them.
func TestLiveStreamResumes(t *testing.T) {
	s, src := serve(t, Options{})
	src.events <- api.Event{Kind: "failover", Node: "n1", Service: "web", Message: "first"}
	src.events <- api.Event{Kind: "failover", Node: "n1", Service: "web", Message: "second"}
	var epoch string
	waitFor(t, "two events in the view", func() bool {
		_, body := get(t, s.URL+"/events")
		return strings.Contains(body, "second")
	})
	c := &http.Client{Timeout: 10 * time.Second}
	open := func(lastID string) []sseMsg {
		req, _ := http.NewRequest("GET", s.URL+"/live?view=events", nil)
		req.Header.Set("Last-Event-ID", lastID)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// the first message is the state; the events follow at once
		return readSSE(t, resp.Body, func(m sseMsg) bool { return strings.Contains(m.data, "second") })
	}
	msgs := open("none:0")
	var events []sseMsg
	for _, m := range msgs {
		if m.event == "event" {
			events = append(events, m)
		}
	}
	if len(events) != 2 {
		t.Fatalf("after another run's id: %+v, want both events", msgs)
	}
	epoch, _, _ = strings.Cut(events[0].id, ":")
	for _, m := range open(epoch + ":1") {
		if m.event == "event" && strings.Contains(m.data, "first") {
			t.Fatalf("resumed after event 1 but got it again: %+v", m)
		}
	}
}

// A guess costs the same wherever it comes: a wrong bearer token or a
// wrong session cookie waits the login form's delay, and guesses in
// parallel wait one after the other.
func TestWrongCredentialCostsTheDelayEverywhere(t *testing.T) {
	s, _ := serve(t, Options{Token: testToken})
	start := time.Now()
	var wg sync.WaitGroup
	for _, hdr := range [][]string{
		{"Authorization", "Bearer " + strings.Repeat("x", len(testToken))},
		{"Cookie", cookieName + "=" + strings.Repeat("0", 64)},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, _ := get(t, s.URL+"/events", hdr...); resp.StatusCode == 200 {
				t.Errorf("GET /events with %s: 200", hdr[0])
			}
		}()
	}
	wg.Wait()
	if took := time.Since(start); took < 2*DefaultFailDelay {
		t.Fatalf("two wrong credentials in parallel answered in %s: want at least 2 x %s, one after the other", took, DefaultFailDelay)
	}
	// no credential at all is no guess: the redirect to the form is at once
	start = time.Now()
	if resp, _ := get(t, s.URL+"/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET / without a credential: %d", resp.StatusCode)
	}
	if took := time.Since(start); took >= DefaultFailDelay {
		t.Errorf("a request without a credential waited %s", took)
	}
}

// After the login, the browser goes to a path of the view only: a tab or
// a newline inside the path (dropped by browsers, "/\t/evil.example" is
// "//evil.example"), a backslash or a space send it to "/".
func TestLoginNextStaysOnTheView(t *testing.T) {
	for _, p := range []string{"/\t/evil.example", "/\n/evil.example", "/\r//evil.example", "/\\evil.example", "/ /evil.example",
		"/\x00/evil.example", "/\u0085/evil.example", "/\u2028/evil.example", "//evil.example", "https://evil.example", "evil.example"} {
		if got := localPath(p); got != "/" {
			t.Errorf("localPath(%q) = %q, want /", p, got)
		}
	}
	for _, p := range []string{"/", "/service/web", "/service/a%20b", "/events?x=1"} {
		if got := localPath(p); got != p {
			t.Errorf("localPath(%q) = %q", p, got)
		}
	}
	s, _ := serve(t, Options{Token: testToken})
	req, _ := http.NewRequest("POST", s.URL+"/login?next=/%09/evil.example", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login with next=/%%09/evil.example: %d Location %q, want /", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body := get(t, s.URL+"/login?next=/%09/evil.example")
	if !strings.Contains(body, `name="next" value="/"`) {
		t.Fatalf("the login form keeps a next with a tab:\n%s", body)
	}
}

// The parameters of an OCF resource are shown only with an access token:
// without one, anyone on the host reads the view, and a parameter may hold
// a secret no mask recognises. The agent is shown either way.
func TestOCFParametersNeedTheToken(t *testing.T) {
	label := "ocf:heartbeat:pgsql primary_conninfo_opt=keepalives_idle=60 rep_mode=sync"
	put := func(src *fakeSource) {
		src.set(func(st *dataset.ClusterStatus) {
			s := st.Services["web"]
			s.Instances["n1"].Resources["ocf#db"] = dataset.Resource{Status: dataset.StatusUp, Label: label}
		})
	}
	open, src := serve(t, Options{})
	put(src)
	_, body := get(t, open.URL+"/service/web")
	if strings.Contains(body, "keepalives_idle") || strings.Contains(body, "rep_mode") || !strings.Contains(body, "ocf:heartbeat:pgsql (parameters shown with an access token") {
		t.Errorf("without a token, the OCF parameters are shown (or the agent is not):\n%s", body)
	}
	guarded, src2 := serve(t, Options{Token: testToken})
	put(src2)
	_, body = get(t, guarded.URL+"/service/web", "Authorization", "Bearer "+testToken)
	if !strings.Contains(body, "primary_conninfo_opt=keepalives_idle=60 rep_mode=sync") {
		t.Errorf("with the token, the OCF parameters are not shown:\n%s", body)
	}
}

// A flex service shows its instances up of its target: in the grid (the
// svcmon grid's "up 2/3") and in its page's summary.
func TestFlexServiceShown(t *testing.T) {
	s, src := serve(t, Options{})
	src.set(func(st *dataset.ClusterStatus) {
		w := st.Services["web"]
		w.Flex = &dataset.FlexStatus{Up: 1, Target: 2, Min: 1, Max: 2}
		w.Avail, w.Overall = dataset.StatusWarn, dataset.StatusWarn
		st.Services["web"] = w
	})
	shows := func(path, want string) func() bool {
		return func() bool { _, body := get(t, s.URL+path); return strings.Contains(body, want) }
	}
	waitFor(t, "the grid shows warn 1/2", shows("/", ">warn 1/2</td>"))
	waitFor(t, "the page says 1 of 2 up", shows("/service/web", "1 of 2 up, min 1, max 2"))
}

// A rollout in progress shows in the grid (the svcmon note and line) and
// on its service's page: where it stands, and each node's batch, the
// config it runs, its turn and what it waits for.
func TestRolloutShown(t *testing.T) {
	s, src := serve(t, Options{})
	src.set(func(st *dataset.ClusterStatus) {
		w := st.Services["web"]
		w.Rollout = &dataset.RolloutStatus{ID: "n1-12", Digest: "8d04e7a1c2f3aa", Parallelism: 1, Batches: 2, State: dataset.RolloutInProgress,
			Summary: "batch 2/2: n2 pending; ok n1", OK: 1, Pending: 1,
			Turns: []dataset.RolloutTurnStatus{{Node: "n1", Batch: 1, State: "ok", RunDigest: "8d04e7a1c2f3aa"},
				{Node: "n2", Batch: 2, RunDigest: "1c2f38d04e7abb", Why: "config 8d04e7a1c2f3 not received yet (it holds 1c2f38d04e7a)"}}}
		st.Services["web"] = w
	})
	shows := func(path, want string) func() bool {
		return func() bool { _, body := get(t, s.URL+path); return strings.Contains(body, want) }
	}
	waitFor(t, "the grid says the rollout", shows("/", "web: rollout n1-12 of config 8d04e7a1c2f3: batch 2/2: n2 pending; ok n1"))
	waitFor(t, "the page's rollout heading", shows("/service/web", `<h2 id="rollout">Rollout n1-12</h2>`))
	waitFor(t, "n2's turn waits for its config", shows("/service/web",
		`<th scope="row">n2</th><td>2</td><td>1c2f38d04e7a</td>`+"\n"+`<td class="">-</td>`+"\n"+`<td class="wrap">config 8d04e7a1c2f3 not received yet (it holds 1c2f38d04e7a)</td>`))
}
