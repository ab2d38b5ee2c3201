package resource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// setFixture builds app resources driven by one script: `act NAME ACTION`
// appends "ACTION NAME" to order.log, start creates NAME.up, stop removes
// it, check tests it. A name listed in failStart (failStop) fails that
// action with exit 2.
type setFixture struct {
	dir  string
	act  string
	env  Env
	logs *logRec
}

func newSetFixture(t *testing.T, failStart, failStop string) *setFixture {
	t.Helper()
	env, rec := testEnv(t)
	dir := t.TempDir()
	act := script(t, "act", `
d=`+dir+`
echo "$2 $1" >> $d/order.log
case "$2" in
start) case " `+failStart+` " in *" $1 "*) echo "cannot start $1"; exit 2;; esac; touch $d/$1.up;;
stop) case " `+failStop+` " in *" $1 "*) echo "cannot stop $1"; exit 2;; esac; rm -f $d/$1.up;;
check) [ -f $d/$1.up ] || exit 1;;
esac`)
	return &setFixture{dir: dir, act: act, env: env, logs: rec}
}

func (f *setFixture) rc(name string) config.ResourceConfig {
	cmd := func(a string) string { return f.act + " " + name + " " + a }
	return config.ResourceConfig{RID: "app#" + name, Type: "app", Name: name,
		Start: cmd("start"), Stop: cmd("stop"), Check: cmd("check")}
}

func (f *setFixture) order() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "order.log"))
	var out []string
	for _, l := range strings.Fields(strings.ReplaceAll(string(b), " ", "_")) {
		if !strings.HasPrefix(l, "check_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, ",")
}

func (f *setFixture) up(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, name+".up"))
	return err == nil
}

func newSet(t *testing.T, f *setFixture, rcs ...config.ResourceConfig) *Set {
	t.Helper()
	s, err := NewSet(rcs, f.env)
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return s
}

func TestSetStartStopOrder(t *testing.T) {
	ctx := context.Background()
	f := newSetFixture(t, "", "")
	dis := f.rc("c")
	dis.Disable = true
	s := newSet(t, f, f.rc("a"), f.rc("b"), dis)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got, want := f.order(), "start_a,start_b,stop_b,stop_a"; got != want {
		t.Errorf("actions = %s, want %s", got, want)
	}
}

func TestSetRollback(t *testing.T) {
	f := newSetFixture(t, "b", "")
	s := newSet(t, f, f.rc("a"), f.rc("b"), f.rc("c"))
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "app#b") || !strings.Contains(err.Error(), "cannot start b") {
		t.Fatalf("Start() = %v, want the error of app#b", err)
	}
	if got, want := f.order(), "start_a,start_b,stop_a"; got != want {
		t.Errorf("actions = %s, want %s", got, want)
	}
	if f.up("a") || f.up("c") {
		t.Errorf("a up %v, c up %v after the rollback, want both down", f.up("a"), f.up("c"))
	}
	if !f.logs.has("app#a: rollback: stop") {
		t.Errorf("log lacks the rollback line; got:\n%s", f.logs)
	}
}

func TestSetRollbackFailureJoined(t *testing.T) {
	f := newSetFixture(t, "b", "a")
	s := newSet(t, f, f.rc("a"), f.rc("b"))
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot start b") || !strings.Contains(err.Error(), "rollback: app#a: stop failed") {
		t.Fatalf("Start() = %v, want the start error of b and the rollback error of a", err)
	}
}

func TestSetOptionalFailure(t *testing.T) {
	ctx := context.Background()
	f := newSetFixture(t, "b", "b")
	opt := f.rc("b")
	opt.Optional = true
	s := newSet(t, f, f.rc("a"), opt, f.rc("c"))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start() with a failing optional resource = %v, want nil", err)
	}
	if !f.up("a") || !f.up("c") {
		t.Errorf("a up %v, c up %v, want both up", f.up("a"), f.up("c"))
	}
	if !f.logs.has("app#b: optional resource failed to start") {
		t.Errorf("log lacks the optional failure; got:\n%s", f.logs)
	}
	if err := s.Stop(ctx); err != nil {
		t.Errorf("Stop() with a failing optional resource = %v, want nil", err)
	}
}

func TestSetStopContinues(t *testing.T) {
	f := newSetFixture(t, "", "b")
	s := newSet(t, f, f.rc("a"), f.rc("b"), f.rc("c"))
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	err := s.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "app#b: stop failed: exit code 2: cannot stop b") {
		t.Fatalf("Stop() = %v, want the error of app#b", err)
	}
	if got, want := f.order(), "start_a,start_b,start_c,stop_c,stop_b,stop_a"; got != want {
		t.Errorf("actions = %s, want %s", got, want)
	}
}

func TestSetStatus(t *testing.T) {
	ctx := context.Background()
	f := newSetFixture(t, "", "")
	a := f.rc("a")
	a.Monitor = true
	b := f.rc("b")
	b.Optional = true
	c := f.rc("c")
	c.Disable = true
	s := newSet(t, f, a, b, c)
	if err := s.StartOne(ctx, "app#a"); err != nil {
		t.Fatalf("StartOne: %v", err)
	}
	got := s.Status(ctx)
	want := map[string]dataset.Resource{
		"app#a": {Status: dataset.StatusUp, Label: a.Start, Monitor: true},
		"app#b": {Status: dataset.StatusDown, Label: b.Start, Optional: true},
		"app#c": {Status: dataset.StatusNA, Label: c.Start, Disabled: true},
	}
	for rid, w := range want {
		g := got[rid]
		g.Log = ""
		if len([]rune(w.Label)) > 48 {
			w.Label = g.Label // shortened; checked in the app tests
		}
		if g != w {
			t.Errorf("Status()[%s] = %+v, want %+v", rid, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Status() has %d resources, want %d", len(got), len(want))
	}
	if g := got["app#a"].Log; g != "start: "+a.Start {
		t.Errorf("Status()[app#a].Log = %q, want the last logged line %q", g, "start: "+a.Start)
	}
	if mon := s.StatusMonitored(ctx); len(mon) != 1 || mon["app#a"].Status != dataset.StatusUp {
		t.Errorf("StatusMonitored() = %+v, want only app#a, up", mon)
	}
	// found down by a check that says nothing: its Log is not the start's
	// old line (the failure reasons quote it: "check says down: start: ...")
	os.Remove(filepath.Join(f.dir, "a.up"))
	if g := s.StatusMonitored(ctx)["app#a"]; g.Status != dataset.StatusDown || g.Log != "" {
		t.Errorf("app#a found down: %+v, want down without the start's last line", g)
	}
	f.up("a")
	if err := s.StartOne(ctx, "app#a"); err != nil {
		t.Fatal(err)
	}
	if err := s.StopOne(ctx, "app#a"); err != nil || f.up("a") {
		t.Errorf("StopOne() = %v, a up %v; want nil, false", err, f.up("a"))
	}
	if err := s.StartOne(ctx, "app#c"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("StartOne(disabled) = %v, want a disabled error", err)
	}
	if err := s.StopOne(ctx, "app#zz"); err == nil || !strings.Contains(err.Error(), "no such resource") {
		t.Errorf("StopOne(unknown) = %v, want a no such resource error", err)
	}
	if got, want := strings.Join(s.RIDs(), ","), "app#a,app#b,app#c"; got != want {
		t.Errorf("RIDs() = %s, want %s", got, want)
	}
}

func TestNewSetDuplicate(t *testing.T) {
	f := newSetFixture(t, "", "")
	if _, err := NewSet([]config.ResourceConfig{f.rc("a"), f.rc("a")}, f.env); err == nil {
		t.Error("NewSet() with a duplicate rid = nil error, want one")
	}
}

// A start of a resource whose check says up does nothing: no second copy.
func TestSetStartSkipsUpResources(t *testing.T) {
	f := newSetFixture(t, "", "")
	s := newSet(t, f, f.rc("a"), f.rc("b"))
	if err := s.StartOne(context.Background(), "app#a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := f.order(), "start_a,start_b"; got != want {
		t.Fatalf("order %s, want %s (a was up: not started again)", got, want)
	}
}
