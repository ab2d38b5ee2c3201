package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios/*.golden")

const scenarioDir = "../testdata/scenarios"

func scenarios(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario in %s: %v", scenarioDir, err)
	}
	sort.Strings(files)
	return files
}

func runFile(t testing.TB, file string) *Result { return runFileRecorded(t, file, false) }

// runFileRecorded is runFile; record keeps the cores' runs (Result.Runs).
func runFileRecorded(t testing.TB, file string, record bool) *Result {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runScript(filepath.Dir(file), filepath.Base(file), string(text), record)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScenarios runs every scenario, checks its expect lines and compares
// its output with the golden file (go test ./sim -update rewrites them).
func TestScenarios(t *testing.T) {
	for _, file := range scenarios(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			res := runFile(t, file)
			for _, f := range res.Failed {
				t.Error(f)
			}
			golden := strings.TrimSuffix(file, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(res.Output), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./sim -update)", err)
			}
			if got := res.Output; got != string(want) {
				t.Errorf("%s: output differs from the golden file (go test ./sim -update, then review the diff):\n%s",
					name, firstDiff(got, string(want)))
			}
		})
	}
}

// TestDeterministic runs every scenario twice: the outputs must be equal.
func TestDeterministic(t *testing.T) {
	for _, file := range scenarios(t) {
		a, b := runFile(t, file), runFile(t, file)
		if a.Output != b.Output {
			t.Errorf("%s: two runs differ:\n%s", file, firstDiff(a.Output, b.Output))
		}
	}
}

// BenchmarkCatalogue runs the whole catalogue per iteration and reports
// the ratio of simulated to real time as sim-s/s (go test -run XXX -bench
// Catalogue ./sim).
func BenchmarkCatalogue(b *testing.B) {
	files := scenarios(b)
	var sim time.Duration
	for b.Loop() {
		for _, file := range files {
			sim += runFile(b, file).Simulated
		}
	}
	b.ReportMetric(sim.Seconds()/b.Elapsed().Seconds(), "sim-s/s")
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  got:  %s\n  want: %s", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}
