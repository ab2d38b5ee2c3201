package daemon

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"haven/config"
	"haven/dataset"
)

func sampleDurable() durable {
	return durable{Lamport: 7, NodeFrozen: true, Services: map[string]durableService{
		"web": {Frozen: true, LocalExpect: "started", ConfigVersion: dataset.Version{Counter: 3, Origin: "n1"},
			Target: dataset.Target{Expect: dataset.ExpectStopped, ID: "n1-7", Version: dataset.Version{Counter: 7, Origin: "n1"}}},
	}, Tombstones: map[string]dataset.Version{"old": {Counter: 2, Origin: "n2"}}}
}

// roundTrip writes st to a state file and reads it back.
func roundTrip(t *testing.T, st durable) durable {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	b, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDurableRoundTrip(t *testing.T) {
	got := roundTrip(t, sampleDurable())
	if got.Lamport != 7 || !got.NodeFrozen || !got.Services["web"].Frozen || got.Services["web"].LocalExpect != "started" ||
		got.Services["web"].Target.ID != "n1-7" || got.Tombstones["old"].Counter != 2 {
		t.Fatalf("round trip lost data: %+v", got)
	}
	// no file: a node that never saved anything
	got, err := loadDurable(filepath.Join(t.TempDir(), "none.json"))
	if err != nil || got.Services == nil || got.Lamport != 0 {
		t.Fatalf("absent state file: %+v, %v; want an empty state", got, err)
	}
}

// The format before the envelope is still read, when it decodes strictly.
const oldFormat = `{
  "lamport": 4,
  "node_frozen": false,
  "services": {
    "web": {
      "frozen": true,
      "target": {"expect": "none", "id": "n1-3", "version": {"counter": 3, "origin": "n1"}},
      "config_version": {"counter": 1, "origin": "n1"},
      "clear": {"version": {"counter": 0, "origin": ""}}
    }
  }
}
`

func TestDurableOldFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte(oldFormat), 0o600)
	got, err := loadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lamport != 4 || !got.Services["web"].Frozen {
		t.Fatalf("old format misread: %+v", got)
	}
}

// A damaged state file is refused, naming the file and saying
// what to do; it never loads as "nothing was said".
func TestDurableDamagedRefused(t *testing.T) {
	good, err := encodeDurable(sampleDurable())
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	cases := []struct{ name, content, want string }{
		{"empty", "", "empty"},
		{"null", "null", "null"},
		{"null with spaces", " null\n", "null"},
		{"empty object", "{}", "missing"},
		{"array", "[]", "object"},
		{"truncated", g[:len(g)/2], "unexpected end"},
		{"trailing garbage", g + "x", ""},
		{"checksum mismatch", strings.Replace(g, `"frozen": true`, `"frozen": false`, 1), "sha256"},
		{"renamed key in envelope", strings.Replace(g, `"services"`, `"servicez"`, 1), ""},
		{"unknown version", strings.Replace(g, `"version": 1`, `"version": 2`, 1), "version 2"},
		{"missing sha256", strings.Replace(g, `"sha256"`, `"sha257"`, 1), ""},
		{"state null", `{"version": 1, "sha256": "00", "state": null}`, "null"},
		{"envelope extra key", strings.Replace(g, `"version": 1,`, `"version": 1, "extra": 1,`, 1), "extra"},
		{"old: renamed services", strings.Replace(oldFormat, `"services"`, `"servicez"`, 1), "servicez"},
		{"old: Services capitalised", strings.Replace(oldFormat, `"services"`, `"Services"`, 1), "Services"},
		{"old: services null", `{"lamport": 1, "node_frozen": false, "services": null}`, "services"},
		{"old: service null", `{"lamport": 1, "node_frozen": false, "services": {"web": null}}`, "services.web"},
		{"old: missing node_frozen", `{"lamport": 1, "services": {}}`, "node_frozen"},
		{"old: missing frozen", strings.Replace(oldFormat, `"frozen": true,`, ``, 1), "frozen"},
		{"old: unknown field", strings.Replace(oldFormat, `"lamport": 4,`, `"lamport": 4, "lcoal": true,`, 1), "lcoal"},
		{"old: wrong type", strings.Replace(oldFormat, `"lamport": 4`, `"lamport": "4"`, 1), "lamport"},
		{"old: target null", strings.Replace(oldFormat, `"target": {"expect": "none", "id": "n1-3", "version": {"counter": 3, "origin": "n1"}}`, `"target": null`, 1), "target"},
		{"old: version null", strings.Replace(oldFormat, `"config_version": {"counter": 1, "origin": "n1"}`, `"config_version": null`, 1), "config_version"},
		{"binary", "\x00\x01\x02\xff", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadDurable(path)
			if err == nil {
				t.Fatalf("a damaged state file was accepted:\n%s", c.content)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error (exit 2): %v", err, err)
			}
			msg := err.Error()
			t.Log(strings.TrimPrefix(msg, path))
			if !strings.HasPrefix(msg, path) || !strings.Contains(msg, c.want) || !strings.Contains(msg, "move it away") ||
				strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming %s, saying %q and the remedy", msg, path, c.want)
			}
		})
	}
}

// A state file that exists but cannot be read is an error naming it and
// the remedy, never an empty state: a directory in its place (EISDIR, for
// every user) and a file of mode 000 (EACCES). Root reads a file of any
// mode: as root the test runs itself again as an unprivileged user
// (asNobody) for the mode 000 case.
func TestDurableUnreadableRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state.json")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	paths := []string{dir}
	if os.Geteuid() == 0 {
		asNobody(t, "TestDurableUnreadableRefused", "a state file of mode 000 refused as uid")
	} else {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, []byte(oldFormat), 0o000); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	for _, path := range paths {
		_, err := loadDurable(path)
		var ce *config.Error
		if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), "cannot read the state file") ||
			!strings.Contains(err.Error(), stateRemedy) {
			t.Fatalf("an unreadable state file %s: %v, want an error naming it, saying why and the remedy", path, err)
		}
	}
	if len(paths) > 1 {
		t.Logf("a state file of mode 000 refused as uid %d", os.Geteuid())
	}
}

// asNobody runs the test named test again in a child process as the
// unprivileged uid and gid 65534 (root reads and writes any file: a
// permission check needs another user), from a copy of the test binary
// that user may run, and fails unless it passes and logs want.
func asNobody(t *testing.T, test, want string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "haven-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "daemon.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+test+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+os.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("%s as uid 65534: %v\n%s", test, err, out)
	}
}
