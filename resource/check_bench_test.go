package resource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// selfCPU is the CPU time of this process (every thread, not its
// children): what the daemon itself spends.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The daemon's own cost of one check of an app resource whose check is
// `true` (process start, pipe, output read, result): ns/op is the wall time
// of a check (the child's run included), self-cpu-ns/op the CPU of this
// process alone (what the daemon spends per check), allocs/op its
// allocations. docs/benchmarks.md has the figures: on 2 shared cores,
// about 195 µs and 55 allocations with exec.Cmd, 110 µs and 17 with run's
// own wait (one ppoll, no helper goroutine). The daemon
// runs Go code on one processor (GOMAXPROCS=1, cmd/nodemgr): measure it so,
// the figures differ (with one ppoll 195-212 µs, parked on the output in
// the runtime's poller 132-144 µs):
//
//	GOMAXPROCS=1 go test -run XXX -bench BenchmarkAppCheck -count 3 ./resource
func BenchmarkAppCheck(b *testing.B) {
	// systemd's PATH for services: the command is looked up as the daemon
	// would, not through a developer's long PATH
	b.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	root := b.TempDir()
	if err := os.Mkdir(filepath.Join(root, "var"), 0o700); err != nil {
		b.Fatal(err)
	}
	env := Env{Service: "websvc", Node: "n1", VarDir: filepath.Join(root, "var", "services", "websvc"), Log: func(string, string) {}}
	d, err := New(config.ResourceConfig{RID: "app#main", Type: "app", Check: "true", Monitor: true}, env)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) // as the daemon's
	defer cancel()
	benchStatusUp(b, ctx, d, "check true")
}

// BenchmarkAppCheckCgroup is BenchmarkAppCheck with the check run in its
// instance's cgroup, as the daemon runs every command of an instance
// (cloned into the group: CLONE_INTO_CGROUP). Root only, cgroup v2.
//
//	GOMAXPROCS=1 go test -run XXX -bench 'BenchmarkAppCheck(Cgroup)?$' -count 3 ./resource
func BenchmarkAppCheckCgroup(b *testing.B) {
	b.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env, _ := cgroupEnv(b)
	d, err := New(config.ResourceConfig{RID: "app#main", Type: "app", Check: "true", Monitor: true}, env)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchStatusUp(b, ctx, d, "check true")
}

// BenchmarkAppCheckBatch is BenchmarkAppCheck as the daemon runs them: a
// batch of 200 checks (due in the same twelfth of check_interval: 200
// services created together, or checked together since the daemon
// started), at most N at once, each on a worker goroutine. The daemon runs
// four a CPU at once (daemon.checkSlots); before, it ran them all
// at once. ns/op and self-cpu-ns/op are per check.
//
//	GOMAXPROCS=1 go test -run XXX -bench BenchmarkAppCheckBatch -benchtime 2000x -count 3 ./resource
func BenchmarkAppCheckBatch(b *testing.B) {
	b.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	root := b.TempDir()
	if err := os.Mkdir(filepath.Join(root, "var"), 0o700); err != nil {
		b.Fatal(err)
	}
	const batch = 200
	var ds [batch]Driver
	for i := range ds {
		svc := fmt.Sprintf("svc%03d", i)
		env := Env{Service: svc, Node: "n1", VarDir: filepath.Join(root, "var", "services", svc), Log: func(string, string) {}}
		d, err := New(config.ResourceConfig{RID: "app#main", Type: "app", Check: "true", Monitor: true}, env)
		if err != nil {
			b.Fatal(err)
		}
		ds[i] = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, atOnce := range []int{batch, 8, 4, 1} {
		b.Run(fmt.Sprintf("at-once=%d", atOnce), func(b *testing.B) {
			jobs := make(chan Driver)
			defer close(jobs)
			var wg sync.WaitGroup
			for range atOnce {
				go func() {
					for d := range jobs {
						if st, r := d.Status(ctx); st != dataset.StatusUp {
							b.Errorf("check true: %s (%s)", st, r)
						}
						wg.Done()
					}
				}()
			}
			checkAll := func() {
				wg.Add(batch)
				for _, d := range ds {
					jobs <- d
				}
				wg.Wait()
			}
			checkAll() // the {var} directories made, the workers' stacks grown
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := selfCPU(b)
			batches := 0
			for n := 0; n < b.N; n += batch {
				checkAll()
				batches++
			}
			b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(batches*batch), "self-cpu-ns/op")
		})
	}
}

// A check reuses its command line prepared (split, looked up in PATH, its
// environment built) instead of preparing it again each time, and run waits
// without exec.Cmd, goroutines or channels: fewer allocations per check (86,
// then 55 with the command prepared, 17 with run's own wait on Go 1.26).
func TestAppCheckPrepared(t *testing.T) {
	t.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{Check: "true"}, env)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		if st, r := d.Status(ctx); st != dataset.StatusUp {
			t.Fatalf("check true: %s (%s)", st, r)
		}
	})
	if allocs > 25 {
		t.Errorf("a check of `true` allocates %.0f times, want at most 25 (its command prepared once, run's own wait)", allocs)
	}
}

// The check's program found in PATH is looked up again when it goes: the
// next check runs the one now found, at once.
func TestAppCheckLooksUpAgain(t *testing.T) {
	dir1, dir2, write := checkPath(t)
	write(dir2, "exit 0")
	env, _ := testEnv(t)
	d := newTestApp(t, config.ResourceConfig{Check: "mycheck --flag"}, env)
	ctx := context.Background()
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		t.Fatalf("first check: %s (%s), want up", st, r)
	}
	if err := os.Remove(filepath.Join(dir2, "mycheck")); err != nil {
		t.Fatal(err)
	}
	write(dir1, `[ "$0" != "" ] && [ "$1" = "--flag" ] && exit 1; exit 3`)
	if st, r := d.Status(ctx); st != dataset.StatusDown {
		t.Fatalf("check after the program moved: %s (%s), want down (the new one, with its argument)", st, r)
	}
	os.Remove(filepath.Join(dir1, "mycheck"))
	if st, r := d.Status(ctx); st != dataset.StatusWarn {
		t.Fatalf("check with the program gone: %s (%s), want warn", st, r)
	}
}

// BenchmarkVarDir is the {var} check that every run makes (makeVarDir)
// when the directory is there, the usual case: 3.8 µs and 8 allocations
// through fsutil.MkdirBeneath, 2.8 µs and 2 with two lstat(2) alone.
func BenchmarkVarDir(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "var", "services", "websvc")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := makeVarDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStatusUp checks that d is up, then times b.N status checks of it,
// each up (what names the check in a failure), reporting the process's
// own CPU per check.
func benchStatusUp(b *testing.B, ctx context.Context, d Driver, what string) {
	b.Helper()
	if st, r := d.Status(ctx); st != dataset.StatusUp {
		b.Fatalf("%s: %s (%s)", what, st, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := selfCPU(b)
	for i := 0; i < b.N; i++ {
		if st, r := d.Status(ctx); st != dataset.StatusUp {
			b.Fatalf("%s: %s (%s)", what, st, r)
		}
	}
	b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "self-cpu-ns/op")
}
