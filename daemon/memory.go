package daemon

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// trimDelay is how long after its start-up the daemon trims its memory
// (trimMemory): the start-up's one-off work (the command line, the config
// files, the first checks and passes, the join) is then behind it.
const trimDelay = 30 * time.Second

// trimMemory waits trimDelay (or ctx), then returns what the start-up
// left to the kernel: the heap's garbage and free pages
// (debug.FreeOSMemory), and the pages of the program's code and read-only
// data that the start-up mapped (dropProgramPages). An idle daemon touches
// a few MB of its program; the start-up maps most of its 19 MB (every
// package's initialisation, and the kernel maps up to 64 kB around each
// page touched). docs/benchmarks.md, "Memory".
func (d *Daemon) trimMemory(ctx context.Context) {
	select {
	case <-d.clk.After(trimDelay):
	case <-ctx.Done():
		return
	}
	debug.FreeOSMemory()
	kb, err := dropProgramPages()
	if err != nil {
		d.log.Debug("program pages not dropped", zap.Error(err))
		return
	}
	d.log.Debug("start-up memory trimmed", zap.Int("program_kb_dropped", kb))
}

// dropProgramPages unmaps from this process the resident pages of its
// read-only file mappings (the program's code and read-only data, the
// shared libraries' ones): madvise(MADV_DONTNEED) on each. Those pages
// are clean copies of the file: the page cache keeps them, and a page used
// again is mapped back on its first access (a minor fault). A mapping
// that is writable, locked, or holds anonymous pages (copies made on
// write, such as the relocated read-only data of a position-independent
// program) is left alone: dropping it would lose what it holds. It
// returns the kB that were resident in the mappings it dropped.
func dropProgramPages() (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type mapping struct {
		start, end uint64
		ok         bool // read-only, of a regular file
		rss        int
		anon       bool // anonymous or locked pages: keep
	}
	var ms []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 0 {
			continue
		}
		if lo, hi, isRange := strings.Cut(fl[0], "-"); isRange && len(fl) >= 5 {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				path := ""
				if len(fl) >= 6 {
					path = fl[5]
				}
				ro := len(fl[1]) == 4 && fl[1][1] == '-' && fl[1][3] == 'p'
				ms = append(ms, mapping{start: start, end: end, ok: ro && strings.HasPrefix(path, "/") && len(fl) == 6})
				continue
			}
		}
		if len(ms) == 0 || len(fl) < 2 {
			continue
		}
		v, err := strconv.Atoi(fl[1])
		if err != nil {
			continue
		}
		m := &ms[len(ms)-1]
		switch fl[0] {
		case "Rss:":
			m.rss = v
		case "Anonymous:", "Locked:":
			m.anon = m.anon || v > 0
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	kb := 0
	for _, m := range ms {
		if !m.ok || m.anon || m.rss == 0 {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), syscall.MADV_DONTNEED); e != 0 {
			return kb, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, e)
		}
		kb += m.rss
	}
	return kb, nil
}
