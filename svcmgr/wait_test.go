package svcmgr

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"haven/api"
	"haven/cli/cliutil"
	"haven/internal/paths"
)

// `svcmgr -s web start --wait` prints what the daemon's answer
// says (the service was frozen before the action) without a status call
// of its own: two API calls (the service list for the selector, the
// action).
func TestStartWaitSaysWasFrozenFromTheAnswer(t *testing.T) {
	root := t.TempDir()
	p := paths.New(root)
	if err := os.MkdirAll(filepath.Dir(p.Socket), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []string
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case api.PathServices:
			json.NewEncoder(w).Encode([]api.ServiceEntry{{Name: "web"}})
		case api.PathServiceAction:
			var req api.ActionRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.Name != "web" || req.Action != "start" || !req.Wait {
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(api.Error{Error: "unexpected request", Status: 2})
				return
			}
			json.NewEncoder(w).Encode(api.ActionResponse{ID: "x1", Result: "target started reached (id x1)", WasFrozen: "frozen"})
		default:
			// the whole status, for the old note
			json.NewEncoder(w).Encode(map[string]any{"services": map[string]any{"web": map[string]any{"frozen": "frozen"}}})
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	app := App()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	code := cliutil.MainContext(context.Background(), app, []string{"svcmgr", "--root", root, "-s", "web", "start", "--wait"})
	if code != 0 || !strings.Contains(out.String(), "web: target started reached (id x1); the service was frozen: thawed by this action") {
		t.Fatalf("exit %d, out %q, err %q", code, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET " + api.PathServices, "POST " + api.PathServiceAction}; strings.Join(calls, ", ") != strings.Join(want, ", ") {
		t.Fatalf("API calls %v, want %v", calls, want)
	}
}
