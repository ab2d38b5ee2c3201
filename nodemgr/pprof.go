package nodemgr

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// EnvPprof, when set to a loopback host:port, makes `daemon run` serve Go's
// profiler (net/http/pprof) there: for measuring a running daemon
// (docs/benchmarks.md), never for production. Other addresses are refused.
const EnvPprof = "HAVEN_PPROF_ADDR"

// startPprof starts the opt-in profiler listener of EnvPprof, if set.
func startPprof() error {
	addr := os.Getenv(EnvPprof)
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s=%q: want a loopback address such as 127.0.0.1:6060", EnvPprof, addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvPprof, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go http.Serve(l, mux) // lives as long as the process
	return nil
}
