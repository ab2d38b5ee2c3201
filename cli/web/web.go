// Package web is the daemon's read-only web view (node.web_addr): the
// cluster grid, a page per service and the events, rendered on the server
// with html/template (the static pages need no JavaScript) and updated
// live with server-sent events by one small script.
//
// It is a client of the daemon's local API, as svcmon and svcmgr are
// (Source is what *api.Client offers for reading): the same status object,
// explanation and log lines, rendered by the same functions (package
// render), and nothing that changes anything can be reached from it.
//
// Safety (docs/security.md, "Web view"): every string is escaped by
// html/template; a strict Content-Security-Policy (scripts and styles
// from the view itself only, no inline script); no CORS header, and a
// request another site makes (Origin, Sec-Fetch-Site) is refused; without
// an access token, only a Host that is an IP address or localhost is
// served (DNS rebinding); with one, every page but the login form asks
// for it.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"haven/api"
	"haven/dataset"
)

// Source is what the view reads: the calls of the local API that change
// nothing. *api.Client is one.
type Source interface {
	Status(ctx context.Context) (*dataset.ClusterStatus, error)
	Explain(ctx context.Context, name string, start bool) (*api.Explanation, error)
	Logs(ctx context.Context, node, name string, lines int) (string, error)
	Stream(ctx context.Context, path string, q url.Values, fn func(line []byte) error) error
}

// Options configure a View.
type Options struct {
	Source Source
	// Token, when set, is required from every client (a cookie set by
	// the login form, or Authorization: Bearer).
	Token string
	// TLS says the view is served over HTTPS (the cookie is Secure, the
	// expected origin https).
	TLS bool
	Log *zap.Logger
	// MaxStreams bounds the open live streams (DefaultMaxStreams when 0).
	MaxStreams int
	// MaxStreamsPerClient bounds the live streams of one client
	// (MaxStreams/4 when 0): a local user on the loopback (told apart by
	// the uid that owns the connection's socket, peeruid.go), or an
	// address elsewhere.
	MaxStreamsPerClient int
	// Every is the period at which a live stream re-reads the status
	// when no event came (DefaultEvery when 0).
	Every time.Duration
	// FailDelay is what a wrong token or session costs, one at a time
	// (DefaultFailDelay when 0).
	FailDelay time.Duration
}

const (
	// DefaultMaxStreams live pages at once: each holds a connection.
	DefaultMaxStreams = 32
	// DefaultEvery: a change that no local event announces (a peer's
	// instance) shows within this period, well within a second.
	DefaultEvery = 400 * time.Millisecond
	// DefaultFailDelay is the cost of a wrong credential.
	DefaultFailDelay = time.Second
	// callTimeout bounds each read of the local API.
	callTimeout = 3 * time.Second
	// logLines is how many lines of a service's log its page shows.
	logLines = 30
	// cookieName holds the session (a digest of the token, never the token).
	cookieName = "haven_web"
)

//go:embed assets
var assets embed.FS

// View is one daemon's web view.
type View struct {
	opt     Options
	hub     *hub
	pages   *pages
	streams chan struct{}
	session string // the cookie's value, "" without a token
	static  http.Handler
	// epoch names this run of the view in the ids of the live events.
	epoch   string
	stCache statusCache

	failMu sync.Mutex // serialises refused credentials (a delay each)

	clientMu sync.Mutex
	clients  map[string]int // open live streams by client (clientOf)
}

// New builds the view; Run feeds its event list.
func New(opt Options) *View {
	if opt.Log == nil {
		opt.Log = zap.NewNop()
	}
	if opt.MaxStreams == 0 {
		opt.MaxStreams = DefaultMaxStreams
	}
	if opt.MaxStreamsPerClient == 0 {
		opt.MaxStreamsPerClient = max(1, opt.MaxStreams/4)
	}
	if opt.Every == 0 {
		opt.Every = DefaultEvery
	}
	if opt.FailDelay == 0 {
		opt.FailDelay = DefaultFailDelay
	}
	v := &View{opt: opt, hub: newHub(opt.Source, opt.Log), pages: mustPages(), streams: make(chan struct{}, opt.MaxStreams),
		clients: map[string]int{}}
	if opt.Token != "" {
		m := hmac.New(sha256.New, []byte(opt.Token))
		m.Write([]byte("haven web view session"))
		v.session = hex.EncodeToString(m.Sum(nil))
	}
	var e [6]byte
	rand.Read(e[:])
	v.epoch = hex.EncodeToString(e[:])
	sub, _ := fs.Sub(assets, "assets/static")
	v.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return v
}

// Run follows the daemon's events until ctx ends (reconnecting when the
// stream breaks).
func (v *View) Run(ctx context.Context) { v.hub.run(ctx) }

// Handler serves the view.
func (v *View) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", v.gridPage)
	mux.HandleFunc("GET /service/{name}", v.servicePage)
	mux.HandleFunc("GET /events", v.eventsPage)
	mux.HandleFunc("GET /live", v.live)
	mux.HandleFunc("GET /login", v.loginPage)
	mux.HandleFunc("POST /login", v.login)
	mux.Handle("GET /static/{file}", v.static)
	return v.guard(mux)
}

// csp allows the view's own script, style and images, and its own
// address for the live stream; nothing inline, no frame, no form to
// another site.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// guard sets the security headers of every answer and refuses what must
// not be served: another site's requests, a Host that is a name while no
// token guards the view, a client without the token.
func (v *View) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if v.opt.TLS {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if why := v.crossOrigin(r); why != "" {
			v.opt.Log.Warn("web request refused", zap.String("from", r.RemoteAddr), zap.String("path", r.URL.Path), zap.String("reason", why))
			http.Error(w, "refused: "+why+"; open the view's address directly", http.StatusForbidden)
			return
		}
		if v.session == "" && !literalHost(r.Host) {
			http.Error(w, "refused: the Host is a name and no access token guards this view (node.web_token_file); use the IP address or localhost", http.StatusMisdirectedRequest)
			return
		}
		if v.session != "" && r.URL.Path != "/login" && !strings.HasPrefix(r.URL.Path, "/static/") && !v.authorized(r) {
			if r.Method == http.MethodGet && r.URL.Path != "/live" {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.Set("WWW-Authenticate", `Bearer realm="haven"`)
			http.Error(w, "the access token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin says why r comes from another site, "" when it does not:
// a browser sends Sec-Fetch-Site (same-origin, or none for an address
// typed or bookmarked) and, on a POST or a script's request, Origin.
func (v *View) crossOrigin(r *http.Request) string {
	switch s := r.Header.Get("Sec-Fetch-Site"); s {
	case "", "same-origin", "none":
	default:
		return "a " + s + " request"
	}
	if o := r.Header.Get("Origin"); o != "" {
		scheme := "http"
		if v.opt.TLS {
			scheme = "https"
		}
		if o != scheme+"://"+r.Host {
			return "Origin " + o + " is not this view"
		}
	}
	return ""
}

// literalHost reports whether the Host header names an IP address or
// localhost: a name that resolves to the loopback by a DNS trick (DNS
// rebinding) would let another site's page read the view.
func literalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// authorized reports whether r carries the session cookie or the token
// (Authorization: Bearer). A credential that is wrong costs the same
// delay as a wrong token at the login form (refused): a guess is a guess,
// whatever the way it comes.
func (v *View) authorized(r *http.Request) bool {
	presented := false
	if c, err := r.Cookie(cookieName); err == nil {
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(v.session)) == 1 {
			return true
		}
		presented = true
	}
	if a := r.Header.Get("Authorization"); a != "" {
		tok, bearer := strings.CutPrefix(a, "Bearer ")
		if bearer && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(v.opt.Token)) == 1 {
			return true
		}
		presented = true
	}
	if presented {
		v.refused(r, "wrong access token or session")
	}
	return false
}

// refused answers a wrong credential after FailDelay, one at a time
// across the view: guesses, in parallel or not, go at one a delay.
func (v *View) refused(r *http.Request, why string) {
	v.failMu.Lock()
	time.Sleep(v.opt.FailDelay)
	v.failMu.Unlock()
	v.opt.Log.Warn("web request refused: "+why, zap.String("from", r.RemoteAddr), zap.String("path", r.URL.Path))
}

func (v *View) loginPage(w http.ResponseWriter, r *http.Request) {
	v.pages.write(w, "login", pageData{Title: "Log in", Next: localPath(r.URL.Query().Get("next"))})
}

// login checks the token of the form and sets the session cookie. A
// wrong token costs FailDelay, one at a time (refused).
func (v *View) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	next := localPath(r.FormValue("next"))
	if v.session == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if subtle.ConstantTimeCompare([]byte(tok), []byte(v.opt.Token)) != 1 {
		v.refused(r, "wrong token at the login form")
		w.WriteHeader(http.StatusUnauthorized)
		v.pages.write(w, "login", pageData{Title: "Log in", Next: next, Err: "wrong token"})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: v.session, Path: "/", HttpOnly: true,
		Secure: v.opt.TLS, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// localPath keeps a redirect on this view: a path, never another site.
// Browsers drop tabs and newlines from a URL and read a backslash as a
// slash, so "/\t/evil.example" would become "//evil.example", another
// site: a path with a control character, a space or a backslash is
// refused, as is anything that parses with a scheme or a host.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "/"
	}
	for _, r := range p {
		if r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			return "/"
		}
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return p
}

// call bounds one read of the local API.
func call[T any](r *http.Request, f func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	return f(ctx)
}

// errText says why the daemon did not answer, for the page.
func errText(err error) string {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Msg
	}
	return fmt.Sprintf("the local API did not answer: %v", err)
}
