package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"haven/api"
	"haven/dataset"
	"haven/test/testbed"
)

// chromiumPath is Debian's chromium (.ci/run installs it); the browser
// tests skip without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on this machine: the web view's browser test needs it (apt-get install chromium; .ci/run installs it)")
	return ""
}

// artifactDir is where the browser tests write their screenshots:
// $HAVEN_ARTIFACTS, or test-artifacts/ at the top of the repository
// (ignored by git).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HAVEN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test-artifacts")
	}
	dir = filepath.Join(dir, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless chromium (no sandbox: the tests run as root)
// and returns the context of its first tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1100, 760),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shoot writes a PNG of what the tab shows.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// js evaluates a JavaScript expression in the tab.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// poll waits until the expression is true in the tab; an evaluation that
// fails (the page being replaced by a navigation) is tried again.
func poll(t *testing.T, ctx context.Context, d time.Duration, what, expr string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var ok bool
		if ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
	}
	t.Fatalf("%s: not within %s (%s: %v)", what, d, expr, err)
}

// cellJS is the text of service svc's cell of node n in the open grid.
func cellJS(svc, n string) string {
	return fmt.Sprintf(`(document.querySelector('#view tr[data-service=%q] td[data-node=%q]') || {}).textContent || ''`, svc, n)
}

// The web view in a real browser. Three daemons, each with its
// web view; the grid of n2 shows the three nodes and the service; a crash
// of the owner moves the service and the page, open, shows it on the new
// node within 2 s of the daemon knowing it, without a reload; the events
// page, open too, shows the failover. A screenshot of each page is
// written under test-artifacts/web.
func TestWebViewInBrowser(t *testing.T) {
	chromiumPath(t) // skip early without a browser
	t.Parallel()    // loopback daemons on ports of their own; mostly waits
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{name: "prod"})
	webAddr := map[string]string{}
	for _, n := range names {
		webAddr[n] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		setNodeKey(t, c[n], fmt.Sprintf("web_addr = %q", webAddr[n]))
	}
	for _, n := range names {
		c[n].startDaemon()
	}
	for _, n := range names {
		waitFor(t, 15*time.Second, n+" out of rejoin, its peers up", func() bool {
			st := c[n].status()
			for _, p := range names {
				if st.Nodes[p].Status != dataset.NodeUp {
					return false
				}
			}
			return st.Nodes[n].Monitor == dataset.NodeIdle
		})
	}
	createService(t, c["n1"], "web", testbed.HAService(`["n1", "n2", "n3"]`, ""))
	waitFor(t, 15*time.Second, "web up on n1 (the leader)", upOnlyOn(c["n2"], "web", "n1"))

	base := "http://" + webAddr["n2"]
	// without JavaScript: the server renders the grid
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `<tr data-service="web">`) || !strings.Contains(string(body), `data-node="n1">O^</td>`) {
		t.Fatalf("GET / of n2: %d\n%s", resp.StatusCode, body)
	}

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, 10*time.Second, "the live stream open", `document.getElementById('live-status').textContent === 'live'`)
	heads := js[[]string](t, ctx, `Array.from(document.querySelector('#view tbody tr.section').querySelectorAll('th.node')).map(e => e.textContent)`)
	if strings.Join(heads, ",") != "n1,n2,n3" {
		t.Fatalf("grid columns %v, want n1 n2 n3", heads)
	}
	if cell := js[string](t, ctx, cellJS("web", "n1")); !strings.HasPrefix(cell, "O") {
		t.Fatalf("web on n1 in the grid: %q, want up (O)", cell)
	}
	shoot(t, ctx, "grid.png")

	// the events page, open in a second tab, shows what happens next
	evctx, evcancel := chromedp.NewContext(ctx)
	defer evcancel()
	if err := chromedp.Do(evctx, chromedp.Navigate(base+"/events")); err != nil {
		t.Fatal(err)
	}
	poll(t, evctx, 10*time.Second, "the events page's stream open", `document.getElementById('live-status').textContent === 'live'`)

	// a mark survives only as long as the page is not reloaded
	js[bool](t, ctx, `(window.havenTestMark = true)`)
	if _, err := testbed.Crash(c["n1"].root); err != nil {
		t.Fatal(err)
	}
	// when n2's daemon knows web runs there (its API), and when the page shows it
	cli := api.NewClient(filepath.Join(c["n2"].root, "run", "daemon.sock"))
	known, shown := make(chan time.Time, 1), make(chan time.Time, 1)
	go func() {
		for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := cli.Status(cctx)
			cancel()
			if err == nil && st.Services["web"].Instances["n2"].Avail == dataset.StatusUp {
				known <- time.Now()
				return
			}
		}
	}()
	go func() {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`(%s).startsWith('O')`, cellJS("web", "n2")),
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(45*time.Second)))
		if err == nil {
			shown <- time.Now()
		}
	}()
	var tKnown, tShown time.Time
	select {
	case tKnown = <-known:
	case <-time.After(45 * time.Second):
		t.Fatal("web did not fail over to n2 within 45 s")
	}
	select {
	case tShown = <-shown:
	case <-time.After(time.Until(tKnown.Add(2 * time.Second))):
		t.Fatalf("the open grid did not show web on n2 within 2 s of n2 knowing it; it shows %q", js[string](t, ctx, cellJS("web", "n2")))
	}
	lag := tShown.Sub(tKnown)
	t.Logf("the open page showed the failover %s after n2's API did", lag.Round(time.Millisecond))
	if lag > 2*time.Second {
		t.Fatalf("the page showed the failover %s after the daemon knew it, want within 2 s", lag)
	}
	if !js[bool](t, ctx, `window.havenTestMark === true`) {
		t.Fatal("the page was reloaded")
	}
	// n1 is down, its instance not trusted
	poll(t, ctx, 10*time.Second, "n1 marked down in the grid", `Array.from(document.querySelectorAll('#view td[data-node="n1"]')).some(e => e.textContent === 'down')`)
	shoot(t, ctx, "grid-after-failover.png")

	// the events tab shows the failover, live, without a reload
	js[bool](t, evctx, `(window.havenTestMark = true)`)
	poll(t, evctx, 10*time.Second, "the failover in the open event list", `!!document.querySelector('#events tr[data-kind="failover"]')`)
	if msg := js[string](t, evctx, `document.querySelector('#events tr[data-kind="failover"]').textContent`); !strings.Contains(msg, "last ran on n1") {
		t.Fatalf("failover row %q", msg)
	}
	shoot(t, evctx, "events.png")

	// the keyboard: the service's link, focused and entered, opens its page.
	// The live grid may be drawn again between the query of the link and
	// its focus: the focus then names a node gone ("Could not find node
	// with given id", seen on a loaded host), and is tried again
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = chromedp.Do(ctx, chromedp.Focus(`#view tr[data-service="web"] a`), chromedp.KeyEvent("\r")); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, 10*time.Second, "the service page", `location.pathname === '/service/web' && !!document.querySelector('#view tr[data-node="n2"]')`)
	poll(t, ctx, 10*time.Second, "the service page's explanation", `document.querySelector('pre.explain').textContent.includes('running: n2')`)
	shoot(t, ctx, "service.png")

	// a phone: the page fits the screen's width (the grid scrolls in its box)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, 10*time.Second, "the grid on a phone", `!!document.querySelector('#view tr[data-service="web"]')`)
	if w := js[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("on a 390 px wide screen the page is %d px wide", w)
	}
	shoot(t, ctx, "grid-phone.png")
}

// The web view of a real daemon off by default; a token file
// other users may read, or one too short, or a name off the loopback
// without a token, is a config error (exit 2, naming the key); with a
// token, the daemon's pages ask for it and never serve it.
func TestWebViewTokenOfARealDaemon(t *testing.T) {
	t.Parallel() // one daemon on ports of its own
	n := newNode(t, "n1", "")
	port := freePort(t)
	setNodeKey(t, n, fmt.Sprintf("web_addr = \"0.0.0.0:%d\"", port))
	r := n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Out+r.Err, `node.toml:2: node.web_addr: "0.0.0.0:`) || !strings.Contains(r.Out+r.Err, "set web_token_file") {
		t.Fatalf("a web view on every address without a token: %s, want exit 2 naming node.web_addr", r)
	}

	n = newNode(t, "n1", "")
	etc := filepath.Join(n.root, "etc")
	token := "d5b1c0e7a9f24c3e8b6a7d1f"
	if err := os.WriteFile(filepath.Join(etc, "web.token"), []byte(token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	setNodeKey(t, n, fmt.Sprintf("web_addr = \"127.0.0.1:%d\"\nweb_token_file = \"web.token\"", port))
	r = n.run("nodemgr", "daemon", "start")
	if r.Code != 2 || !strings.Contains(r.Out+r.Err, "node.web_token_file") || !strings.Contains(r.Out+r.Err, "chmod 600") {
		t.Fatalf("a token file other users may read: %s, want exit 2 naming node.web_token_file", r)
	}
	if err := os.Chmod(filepath.Join(etc, "web.token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "web.token"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r = n.run("nodemgr", "daemon", "start"); r.Code != 2 || !strings.Contains(r.Out+r.Err, "want at least 16") {
		t.Fatalf("a short token: %s, want exit 2", r)
	}
	// long enough, but not random: refused too
	if err := os.WriteFile(filepath.Join(etc, "web.token"), []byte("Summer2024Summer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r = n.run("nodemgr", "daemon", "start"); r.Code != 2 || !strings.Contains(r.Out+r.Err, "node.web_token_file") || !strings.Contains(r.Out+r.Err, "looks guessable") {
		t.Fatalf("a guessable token of 16 characters: %s, want exit 2 naming node.web_token_file", r)
	}
	if err := os.WriteFile(filepath.Join(etc, "web.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.startDaemon()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	noRedirect := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var resp *http.Response
	waitFor(t, 10*time.Second, "the web view answers", func() bool {
		var err error
		resp, err = noRedirect.Get(base + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("GET / without the token: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/", "/events", "/login", "/static/app.js"} {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), token) || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("GET %s with the token: %d, CSP %q, serves the token %v", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"), strings.Contains(string(b), token))
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key (0600) in dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "haven test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "web.crt"), filepath.Join(dir, "web.key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// With web_tls_cert and web_tls_key the view is HTTPS only
// (HSTS, a Secure cookie), and its connections still go through the
// connection guard (a live page and the pages after it are served).
func TestWebViewOverTLS(t *testing.T) {
	t.Parallel() // one daemon on ports of its own
	n := newNode(t, "n1", "")
	etc := filepath.Join(n.root, "etc")
	cert, key := selfSigned(t, etc)
	token := "7c1e9a04b25d4f6a8e3b0c9d"
	if err := os.WriteFile(filepath.Join(etc, "web.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	setNodeKey(t, n, fmt.Sprintf("web_addr = \"127.0.0.1:%d\"\nweb_token_file = \"web.token\"\nweb_tls_cert = %q\nweb_tls_key = %q", port, cert, key))
	n.startDaemon()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(readFile(t, cert)))
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	// plain HTTP gets no page
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", port)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("the view answered over plain HTTP")
		}
	}
	var resp *http.Response
	waitFor(t, 10*time.Second, "the view answers over HTTPS", func() bool {
		var err error
		resp, err = c.PostForm(base+"/login", map[string][]string{"token": {token}, "next": {"/events"}})
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("login over HTTPS: %d, cookies %v, HSTS %q", resp.StatusCode, resp.Cookies(), resp.Header.Get("Strict-Transport-Security"))
	}
	ck := resp.Cookies()[0]
	get := func(p string) *http.Response {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.AddCookie(ck)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	live := get("/live?view=grid")
	defer live.Body.Close()
	if live.StatusCode != 200 || live.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("live stream over HTTPS: %d", live.StatusCode)
	}
	for range 20 {
		r := get("/")
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !strings.Contains(string(b), "Cluster") {
			t.Fatalf("GET / over HTTPS with the cookie: %d", r.StatusCode)
		}
	}
}
