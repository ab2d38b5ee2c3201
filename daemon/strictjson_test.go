package daemon

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"haven/api"
	"haven/internal/clock"
)

// The local API decodes field names exactly and refuses
// a field given twice; encoding/json alone took "Local" for "local" and
// kept the last of duplicates, so {"local":true,"local":false} became a
// cluster-wide action.
func TestAPIDecodeIsExact(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"name":"web","action":"freeze","local":true,"local":false}`, `duplicate field "local"`},
		{`{"name":"web","action":"freeze","Local":true}`, `unknown field "Local" (field names are case-sensitive: "local")`},
		{`{"NAME":"web","action":"freeze"}`, `unknown field "NAME"`},
		{`{"name":"web","name":"db","action":"freeze"}`, `duplicate field "name"`},
		{`{"name":"web","action":"freeze","lcoal":true}`, `unknown field "lcoal"`},
	}
	l := newAPILimits(clock.Real{})
	for _, c := range cases {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", api.PathServiceAction, strings.NewReader(c.body))
		var v api.ActionRequest
		if l.decode(rec, req, &v) {
			t.Errorf("%s: accepted as %+v", c.body, v)
			continue
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"status":2`) ||
			!strings.Contains(rec.Body.String(), strings.ReplaceAll(c.want, `"`, `\"`)) {
			t.Errorf("%s: want 400, status 2 and %s; got %d %s", c.body, c.want, rec.Code, rec.Body)
		}
	}
	// duplicates are refused inside nested values and lists too, and
	// exact bodies still pass
	for _, c := range []struct {
		body string
		v    any
		ok   bool
	}{
		{`{"name":"web","op":"set","kws":["a=1","a=1"]}`, &api.KeywordRequest{}, true},
		{`{"a":{"b":1,"b":2}}`, &map[string]any{}, false},
		{`{"name":"web","action":"start","local":true,"wait":true,"wait_timeout":5}`, &api.ActionRequest{}, true},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/x", strings.NewReader(c.body))
		if got := l.decode(rec, req, c.v); got != c.ok {
			t.Errorf("%s: decode %v, want %v (%s)", c.body, got, c.ok, rec.Body)
		}
	}
}
