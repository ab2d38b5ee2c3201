package resource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	for _, engine := range []string{"podman", "docker"} {
		benchContainers(b, engine, root, n, round)
	}
}

// benchContainers is BenchmarkCheck50's container rounds with engineName:
// "container" and "container-each" with podman, "docker" and
// "docker-each" with docker, whose cpu-ns/op counts dockerd's and its
// containerd's CPU too (they are not the benchmark's waited-for
// children; the podman store has no such service).
func benchContainers(b *testing.B, engineName, root string, n int, round func(*testing.B, []Driver, func())) {
	if why := testbed.EngineUnavailable(engineName); why != "" {
		b.Log(why)
		return
	}
	p, err := testbed.NewStore(engineName, filepath.Join(root, engineName))
	if err != nil {
		b.Log(err)
		return
	}
	defer p.Close()
	if err := p.ImportBusybox("localhost/hbox:1"); err != nil {
		b.Fatal(err)
	}
	var ds []Driver
	var eng *engine
	for i := range n {
		svc := fmt.Sprintf("svc%02d", i)
		env := Env{Service: svc, Node: fmt.Sprintf("bench-%d", os.Getpid()), Cluster: "bench", EngineEnv: p.Environ(),
			VarDir: filepath.Join(root, "var", "services", svc)}
		d, err := New(engineRC(engineName, "main", nil), env)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		eng = d.(*container).eng
		ds = append(ds, d)
	}
	name := "container"
	var service func() time.Duration
	if d, ok := p.(*testbed.Docker); ok {
		name, service = "docker", func() time.Duration { return treeCPU(d.Pid()) }
	}
	measured := func(b *testing.B, ds []Driver, before func()) {
		var s0 time.Duration
		if service != nil {
			s0 = service()
		}
		round(b, ds, before)
		if service != nil {
			b.ReportMetric(float64(service()-s0)/float64(b.N), "service-cpu-ns/op")
		}
	}
	// each round lists the containers once (a round takes less than
	// listFresh: the next one would reuse the listing)
	b.Run(name, func(b *testing.B) { measured(b, ds, eng.changed) })
	b.Run(name+"-each", func(b *testing.B) {
		each := make([]Driver, 0, 2*n)
		for _, d := range ds {
			each = append(each, changer{eng}, d)
		}
		measured(b, each, nil)
	})
}

// treeCPU is the CPU time of process pid and of its descendants alive
// (their utime and stime: /proc/PID/stat).
func treeCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	total := time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(t)
		for _, k := range strings.Fields(string(kids)) {
			if c, err := strconv.Atoi(k); err == nil {
				total += treeCPU(c)
			}
		}
	}
	return total
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
