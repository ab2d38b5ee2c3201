package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// dropProbe is written by the test: the program's writable data must keep
// what it holds when the read-only pages are dropped.
var dropProbe = []int{1, 2, 3}

// exeRSS sums the resident kB of this process's mappings of its own
// program file that are not writable (code and read-only data).
func exeRSS(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, kb := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) >= 5 && strings.Contains(fl[0], "-") && !strings.HasSuffix(fl[0], ":") {
			in = len(fl) >= 6 && fl[5] == exe && !strings.Contains(fl[1], "w")
			continue
		}
		if in && len(fl) >= 2 && fl[0] == "Rss:" {
			n, _ := strconv.Atoi(fl[1])
			kb += n
		}
	}
	return kb
}

// The start-up's pages of the program leave the process's resident set,
// and the process runs on: its code comes back as it runs, its writable
// data is kept.
func TestDropProgramPages(t *testing.T) {
	dropProbe[1] = 42
	before := exeRSS(t)
	kb, err := dropProgramPages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	t.Logf("program code and read-only data resident: %d kB before, %d kB after (%d kB dropped)", before, after, kb)
	if kb == 0 || after >= before/2 {
		t.Errorf("program pages resident: %d kB before the drop, %d kB after (reported %d kB dropped); want less than half left", before, after, kb)
	}
	if dropProbe[0] != 1 || dropProbe[1] != 42 || dropProbe[2] != 3 {
		t.Errorf("writable data changed by the drop: %v", dropProbe)
	}
	// the code runs on: a second drop parses smaps again, through code
	// just mapped back
	if _, err := dropProgramPages(); err != nil {
		t.Fatal(err)
	}
}
