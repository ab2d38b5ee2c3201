package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
)

// WebView is the web view's server side (cli/web.View).
type WebView interface {
	Handler() http.Handler
	Run(ctx context.Context)
}

// WebOptions are what the daemon hands the web view: the local API it
// reads, the access token (node.web_token_file), whether it is served over
// TLS, its log and its cap of live pages.
type WebOptions struct {
	Source     *api.Client
	Token      string
	TLS        bool
	Log        *zap.Logger
	MaxStreams int
}

// The web view's connections (node.web_addr): a browser holds a few (6
// at most per host for HTTP/1.1), a live page one for as long as it is
// open; idle ones give way to new ones at either cap (connguard.go).
const (
	webMaxConns    = 64
	webPerClient   = 16
	webMaxStreams  = 32 // under webMaxConns: pages still load with every stream open
	webIdleTimeout = 30 * time.Second
	webHeaderTime  = 3 * time.Second
)

// serveWeb serves the read-only web view (cli/web) on node.web_addr,
// nothing when unset, and returns what stops it. The view is a client of
// this daemon's local API, as svcmon is. A bad token file, certificate or
// address is a config error naming the key.
func (d *Daemon) serveWeb() (stop func(), err error) {
	addr := config.WebListenAddr(d.node.WebAddr)
	if addr == "" {
		return func() {}, nil
	}
	if d.opts.WebView == nil {
		return nil, d.node.ErrAt(config.SectionNode, "web_addr", "this program serves no web view (run the daemon with nodemgr daemon run)")
	}
	opt := WebOptions{Source: api.NewClient(d.p.Socket), Log: d.log.Named("web"), MaxStreams: webMaxStreams}
	if f := d.node.WebTokenFile; f != "" {
		if opt.Token, err = readSecretFile(d.nodePath(f)); err != nil {
			return nil, d.node.ErrAt(config.SectionNode, "web_token_file", "%v", err)
		}
		if why := config.WebTokenWeak(opt.Token); why != "" {
			return nil, d.node.ErrAt(config.SectionNode, "web_token_file", "%s: %s", f, why)
		}
	}
	var tlsCfg *tls.Config
	if d.node.WebTLSCert != "" {
		if _, err := readSecretFile(d.nodePath(d.node.WebTLSKey)); err != nil {
			return nil, d.node.ErrAt(config.SectionNode, "web_tls_key", "%v", err)
		}
		cert, err := tls.LoadX509KeyPair(d.nodePath(d.node.WebTLSCert), d.nodePath(d.node.WebTLSKey))
		if err != nil {
			return nil, d.node.ErrAt(config.SectionNode, "web_tls_cert", "%v", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		opt.TLS = true
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		return nil, d.node.ErrAt(config.SectionNode, "web_addr", "cannot serve the web view: %q is not an address of this host: %v", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: node.web_addr: cannot serve the web view: %w", d.node.File, err)
	}
	view := d.opts.WebView(opt)
	srv := &http.Server{Handler: view.Handler(), ReadHeaderTimeout: webHeaderTime, IdleTimeout: webIdleTimeout,
		MaxHeaderBytes: 16 << 10, ErrorLog: errorLog(d.log.Named("web"))}
	var gln net.Listener = guardServer(srv, ln, webMaxConns, webPerClient)
	if tlsCfg != nil {
		// the guard tracks its own connections: hand it the one under TLS
		inner := srv.ConnState
		srv.ConnState = func(c net.Conn, st http.ConnState) {
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			inner(c, st)
		}
		gln = tls.NewListener(gln, tlsCfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go view.Run(ctx)
	go func() {
		if err := srv.Serve(gln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("web server", zap.Error(err))
		}
	}()
	scheme := "http"
	if opt.TLS {
		scheme = "https"
	}
	d.log.Info("serving the web view", zap.String("url", scheme+"://"+ln.Addr().String()+"/"), zap.Bool("token", opt.Token != ""))
	return func() {
		cancel()
		srv.Close()
	}, nil
}

// nodePath resolves a path of node.toml: relative to its directory.
func (d *Daemon) nodePath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(d.node.File), p)
}

// readSecretFile reads a file only root may read (its first line, trimmed).
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %04o lets other users read it: chmod 600 it", path, perm)
	}
	b := make([]byte, 64<<10)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	return strings.TrimSpace(line), nil
}
