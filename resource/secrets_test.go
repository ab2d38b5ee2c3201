package resource

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"haven/config"
)

// The secrets a text names are masked: a KEY=VALUE whose key says it holds
// one (in mount options, a connection string, a command line), a URL's
// password; the rest is left as it is.
func TestMaskSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"rw,username=bob,password=s3cret,vers=3":           "rw,username=bob,password=***,vers=3",
		"host=db port=5432 user=rep password='a b' x=1":    "host=db port=5432 user=rep password=*** x=1",
		`keepalives_idle=60 PASSWORD="p w" sslmode=verify`: "keepalives_idle=60 PASSWORD=*** sslmode=verify",
		"http://admin:p4ss@localhost:80/server-status":     "http://admin:***@localhost:80/server-status",
		"mysqladmin --user=root --password=xyz status":     "mysqladmin --user=root --password=*** status",
		"PGPASSWORD=abc psql -U rep":                       "PGPASSWORD=*** psql -U rep",
		"api_token=t0k&x=1":                                "api_token=***&x=1",
		"10.0.0.50/24@eth0":                                "10.0.0.50/24@eth0",
		"http://localhost:80/server-status":                "http://localhost:80/server-status",
		"sh -c 'kill $(cat {var}/main.pid)'":               "sh -c 'kill $(cat {var}/main.pid)'",
	} {
		if got := MaskSecrets(in); got != want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}

// The status of an OCF resource (published to every peer, shown by every
// view) masks what holds a secret: a parameter its meta-data describes as
// one (hush: "Shared cookie"), by name (erlang_cookie), and the secrets
// inside the other values (Filesystem's options, apache's statusurl).
func TestOCFStatusMasksSecrets(t *testing.T) {
	_, dir, _ := fakeAgent(t, config.ResourceConfig{})
	rc := config.ResourceConfig{RID: "ocf#h", Type: "ocf", Name: "h", Agent: "haven:hushed",
		Params: map[string]string{"dir": dir, "hush": "c00kie", "erlang_cookie": "ERLC", "options": "rw,username=bob,password=s3cret",
			"statusurl": "http://admin:p4ss@localhost/server-status"}}
	env, _ := testEnv(t)
	root, err := filepath.Abs("testdata/ocfsecret") // the hushed agent's own root
	if err != nil {
		t.Fatal(err)
	}
	env.OCFRoot = root
	s, err := NewSet([]config.ResourceConfig{rc}, env)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Status(context.Background())["ocf#h"]
	for _, secret := range []string{"c00kie", "ERLC", "s3cret", "p4ss"} {
		if strings.Contains(r.Label, secret) || strings.Contains(r.Log, secret) {
			t.Errorf("the status shows %q: label %q, log %q", secret, r.Label, r.Log)
		}
	}
	for _, want := range []string{"hush=***", "erlang_cookie=***", "options=rw,username=bob,password=***", "statusurl=http://admin:***@localhost/server-status", "dir=" + dir} {
		if !strings.Contains(r.Label, want) {
			t.Errorf("label %q lacks %q", r.Label, want)
		}
	}
}
