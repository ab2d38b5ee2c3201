package resource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/test/testbed"
)

// allCPU is the CPU time of this process and of its children waited for:
// what a check costs the node, the engine's own run included.
func allCPU(b *testing.B) time.Duration {
	var self, kids syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) != nil {
		b.Fatal("getrusage")
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// BenchmarkCheck50 is a round of status checks of 50 resources, one per
// service, checked one after the other: 50 app resources whose check is
// `true` (app), 50 running containers of real podman sharing the round's
// listing of the node's containers (container), and the same with one
// engine call per check (container-each: what a check per container would
// cost). ns/op is the wall time of the round, cpu-ns/op the CPU of the
// round, the daemon's and its children's (the engine's). docs/design-notes.md
// has the figures.
//
//	GOMAXPROCS=1 go test -run XXX -bench BenchmarkCheck50 -benchtime 20x ./resource
func BenchmarkCheck50(b *testing.B) {
	b.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	const n = 50
	root := b.TempDir()
	if err := os.Mkdir(filepath.Join(root, "var"), 0o700); err != nil {
		b.Fatal(err)
	}
	round := func(b *testing.B, ds []Driver, before func()) {
		ctx := context.Background()
		check := func() {
			if before != nil {
				before()
			}
			for _, d := range ds {
				if st, r := d.Status(ctx); st != dataset.StatusUp {
					b.Fatalf("%s: %s (%s)", d.RID(), st, r)
				}
			}
		}
		check()
		b.ResetTimer()
		cpu0 := allCPU(b)
		for b.Loop() {
			check()
		}
		b.ReportMetric(float64(allCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("app", func(b *testing.B) {
		var ds []Driver
		for i := range n {
			svc := fmt.Sprintf("svc%02d", i)
			d, err := New(config.ResourceConfig{RID: "app#main", Type: "app", Check: "true"},
				Env{Service: svc, Node: "n1", VarDir: filepath.Join(root, "var", "services", svc)})
			if err != nil {
				b.Fatal(err)
			}
			ds = append(ds, d)
		}
		round(b, ds, nil)
	})
	if why := testbed.PodmanUnavailable(); why != "" {
		b.Skip(why)
	}
	p, err := testbed.NewPodman(filepath.Join(root, "podman"))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.ImportBusybox("localhost/hbox:1"); err != nil {
		b.Fatal(err)
	}
	var ds []Driver
	var eng *engine
	for i := range n {
		svc := fmt.Sprintf("svc%02d", i)
		env := Env{Service: svc, Node: fmt.Sprintf("bench-%d", os.Getpid()), Cluster: "bench", EngineEnv: p.Env,
			VarDir: filepath.Join(root, "var", "services", svc)}
		d, err := New(containerRC("main", nil), env)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		eng = d.(*container).eng
		ds = append(ds, d)
	}
	// each round lists the containers once (a round takes less than
	// listFresh: the next one would reuse the listing)
	b.Run("container", func(b *testing.B) { round(b, ds, eng.changed) })
	b.Run("container-each", func(b *testing.B) {
		each := make([]Driver, 0, 2*n)
		for _, d := range ds {
			each = append(each, changer{eng}, d)
		}
		round(b, each, nil)
	})
}

// changer is a check that tells the engine its containers changed: the
// next check lists them again.
type changer struct{ e *engine }

func (c changer) RID() string                 { return "changer" }
func (c changer) Label() string               { return "" }
func (c changer) Start(context.Context) error { return nil }
func (c changer) Stop(context.Context) error  { return nil }
func (c changer) Status(context.Context) (dataset.Status, string) {
	c.e.changed()
	return dataset.StatusUp, ""
}
