package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"haven/internal/paths"
	"haven/test/testbed"
)

// ---------------------------------------------------------------------------
// mem: where the resident memory of an idle node goes (docs/benchmarks.md,
// "Memory"). For each process of each node (the daemon and its guard): its
// mappings from /proc/PID/smaps by kind (the program's text, read-only
// data and data, shared libraries, anonymous memory: the Go heap, the
// runtime's own structures and thread stacks), RSS and PSS each, and what
// is locked. For n1's daemon, through its profiler (HAVEN_PPROF_ADDR): the
// runtime's accounts (runtime.MemStats, as /debug/pprof/heap?debug=1 ends
// with them), its goroutines, and the live heap by package (the heap
// profile's records, each given to the innermost frame outside the standard
// library).

// memKinds are the kinds of mapping, in the order printed.
var memKinds = []string{"text", "rodata", "data+bss", "libs", "anon", "stack", "other"}

// memPart is what the mappings of one kind hold, in kB.
type memPart struct{ rss, pss, anon, locked int }

func (a *memPart) add(b memPart) {
	a.rss += b.rss
	a.pss += b.pss
	a.anon += b.anon
	a.locked += b.locked
}

// smapsByKind reads /proc/PID/smaps and sums its mappings by kind: the
// executable's executable mapping (text), its read-only one (rodata: the
// read-only data and the function tables), its writable one and the
// anonymous mapping right after it (data+bss), other files (libs), the
// main thread's stack, other anonymous mappings (anon) and the rest.
func smapsByKind(pid int) (map[string]memPart, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]memPart{}
	var kind string
	var prevEnd uint64
	var prevData bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fl[0], "-"); ok && len(fl) >= 5 && !strings.HasSuffix(fl[0], ":") {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				perms, path := fl[1], ""
				if len(fl) >= 6 {
					path = fl[5]
				}
				data := false
				switch {
				case path == exe && strings.Contains(perms, "x"):
					kind = "text"
				case path == exe && strings.Contains(perms, "w"):
					kind, data = "data+bss", true
				case path == exe:
					kind = "rodata"
				case path == "" && prevData && start == prevEnd:
					kind = "data+bss"
				case path == "":
					kind = "anon"
				case path == "[stack]":
					kind = "stack"
				case strings.HasPrefix(path, "/"):
					kind = "libs"
				default:
					kind = "other"
				}
				prevEnd, prevData = end, data
				continue
			}
		}
		if len(fl) < 2 {
			continue
		}
		v, err := strconv.Atoi(fl[1])
		if err != nil {
			continue
		}
		p := out[kind]
		switch fl[0] {
		case "Rss:":
			p.rss += v
		case "Pss:":
			p.pss += v
		case "Anonymous:":
			p.anon += v
		case "Locked:":
			p.locked += v
		}
		out[kind] = p
	}
	return out, sc.Err()
}

// nodeProcs are the daemon's and the guard's pids of the node at root (0
// when not found): the guard's is in its lock (R/run/guard.lock),
// whichever program runs it (haven-guard, or `nodemgr guard run` before).
func nodeProcs(root string) (daemon, guard int) {
	return testbed.DaemonPID(root), testbed.ReadPID(paths.New(root).GuardLock())
}

// procThreads is the Threads: line of /proc/PID/status.
func procThreads(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func httpGet(url string) ([]byte, error) {
	cl := http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// memStats parses the "# Name = value" lines that end the heap profile in
// its text form (runtime.MemStats); "Stack = inuse / sys" gives StackInuse
// and StackSys, "MSpan = ..." MSpanInuse and MSpanSys, and so on.
func memStats(text string) map[string]uint64 {
	out := map[string]uint64{}
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "# "), " = ")
		if !ok || !strings.HasPrefix(l, "# ") {
			continue
		}
		if a, b, two := strings.Cut(v, " / "); two {
			x, _ := strconv.ParseUint(a, 10, 64)
			y, _ := strconv.ParseUint(b, 10, 64)
			out[k+"Inuse"], out[k+"Sys"] = x, y
			continue
		}
		if x, err := strconv.ParseUint(v, 10, 64); err == nil {
			out[k] = x
		}
	}
	return out
}

// heapSite is the live heap given to one package or function.
type heapSite struct {
	name  string
	bytes float64
}

// heapByOwner reads the records of a heap profile in its text form (each
// "inuse_objects: inuse_bytes [...] @ pcs" followed by its frames, "#\tpc
// func+off file:line") and gives each record's live bytes, unsampled (the
// profile samples one allocation per rate bytes on average: a record of
// objects of size s stands for 1/(1-exp(-s/rate)) times its bytes), to
// the innermost frame whose package is not of the standard library
// (haven's own, or a module's), else to the innermost one outside the
// runtime. It returns the sums by package and by function, largest first,
// and the total.
func heapByOwner(text string) (pkgs, funcs []heapSite, total float64) {
	rate := 512 * 1024.0
	byPkg, byFunc := map[string]float64{}, map[string]float64{}
	var cur float64
	var owner, fallback string
	flush := func() {
		if cur == 0 {
			return
		}
		if owner == "" {
			owner = fallback
		}
		if owner == "" {
			owner = "runtime"
		}
		byFunc[owner] += cur
		byPkg[funcPackage(owner)] += cur
		total += cur
		cur, owner, fallback = 0, "", ""
	}
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "heap profile:"):
			// "heap profile: ... @ heap/RATE2" where RATE2 is twice the rate
			if i := strings.LastIndex(l, "heap/"); i >= 0 {
				if r, err := strconv.ParseFloat(strings.TrimSpace(l[i+5:]), 64); err == nil && r > 0 {
					rate = r / 2
				}
			}
		case strings.HasPrefix(l, "#\t"):
			fl := strings.Fields(l)
			if len(fl) < 3 || cur == 0 {
				continue
			}
			fn := fl[2]
			if i := strings.LastIndex(fn, "+0x"); i > 0 {
				fn = fn[:i]
			}
			pkg := funcPackage(fn)
			if owner == "" && !stdPackage(pkg) {
				owner = fn
			}
			if fallback == "" && pkg != "runtime" && !strings.HasPrefix(pkg, "internal/") {
				fallback = fn
			}
		case strings.HasPrefix(l, "#"):
			flush()
		default:
			flush()
			// "objs: bytes [allocobjs: allocbytes] @ pcs"
			o, rest, ok := strings.Cut(l, ": ")
			if !ok {
				continue
			}
			b, _, ok := strings.Cut(rest, " [")
			objs, err1 := strconv.ParseFloat(strings.TrimSpace(o), 64)
			bytes, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
			if !ok || err1 != nil || err2 != nil || objs == 0 || bytes == 0 {
				continue
			}
			scale := 1.0
			if rate > 1 {
				scale = 1 / (1 - math.Exp(-bytes/objs/rate))
			}
			cur = bytes * scale
		}
	}
	flush()
	sorted := func(m map[string]float64) []heapSite {
		var out []heapSite
		for k, v := range m {
			out = append(out, heapSite{k, v})
		}
		slices.SortFunc(out, func(a, b heapSite) int {
			if a.bytes != b.bytes {
				return int(math.Copysign(1, b.bytes-a.bytes))
			}
			return strings.Compare(a.name, b.name)
		})
		return out
	}
	return sorted(byPkg), sorted(byFunc), total
}

// funcPackage is the package path of a function's symbol name
// (haven/daemon.(*Daemon).run -> haven/daemon,
// github.com/hashicorp/memberlist.(*Memberlist).x -> github.com/hashicorp/memberlist).
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if i := strings.IndexByte(fn[slash+1:], '.'); i >= 0 {
		return fn[:slash+1+i]
	}
	return fn
}

// stdPackage says whether pkg is of the standard library (no dot in its
// first element, and not this module's).
func stdPackage(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".") && first != "haven"
}

// memReport prints the breakdown of every process of c's nodes, and of
// n1's daemon the runtime's accounts and its heap, from its profiler at
// pprofAddr ("" when it has none); heapOut, when set, receives n1's heap
// profile (go tool pprof).
func memReport(c *cluster, nsvc int, pprofAddr, heapOut string) error {
	fmt.Printf("%-4s %-6s %5s %7s %7s", "node", "proc", "thr", "RSS", "PSS")
	for _, k := range memKinds {
		fmt.Printf(" %15s", k+" rss/pss")
	}
	fmt.Printf(" %7s %7s  (kB)\n", "anon", "locked")
	for _, b := range c.nodes {
		d, g := nodeProcs(b.root)
		for _, pp := range []struct {
			name string
			pid  int
		}{{"daemon", d}, {"guard", g}} {
			if pp.pid == 0 {
				fmt.Printf("%-4s %-6s not found\n", b.name, pp.name)
				continue
			}
			parts, err := smapsByKind(pp.pid)
			if err != nil {
				return err
			}
			var tot memPart
			for _, p := range parts {
				tot.add(p)
			}
			fmt.Printf("%-4s %-6s %5d %7d %7d", b.name, pp.name, procThreads(pp.pid), tot.rss, tot.pss)
			var kv []string
			for _, k := range memKinds {
				fmt.Printf(" %15s", fmt.Sprintf("%d/%d", parts[k].rss, parts[k].pss))
				kv = append(kv, fmt.Sprintf("%s_rss_kb=%d", strings.ReplaceAll(k, "+", "_"), parts[k].rss))
			}
			fmt.Printf(" %7d %7d\n", tot.anon, tot.locked)
			fmt.Printf("RESULT mem n=%d services=%d node=%s proc=%s rss_kb=%d pss_kb=%d anon_kb=%d locked_kb=%d %s\n",
				len(c.nodes), nsvc, b.name, pp.name, tot.rss, tot.pss, tot.anon, tot.locked, strings.Join(kv, " "))
		}
	}
	if pprofAddr == "" {
		return nil
	}
	base := "http://" + pprofAddr + "/debug/pprof/"
	heapText, err := httpGet(base + "heap?debug=1")
	if err != nil {
		return err
	}
	gr, err := httpGet(base + "goroutine?debug=1")
	if err != nil {
		return err
	}
	goroutines, _, _ := strings.Cut(string(gr), "\n")
	ms := memStats(string(heapText))
	kb := func(k string) string { return fmt.Sprintf("%s %d", k, ms[k]/1024) }
	fmt.Printf("n1 daemon, the runtime's accounts (kB): %s; %s (of which %s returned to the kernel, so %d resident at most); %s, %s; %s; %s; %s; %s; %s; %s; %s; GC cycles %d; %s\n",
		kb("HeapInuse"), kb("HeapIdle"), kb("HeapReleased"), (ms["HeapIdle"]-ms["HeapReleased"])/1024,
		kb("HeapAlloc"), kb("StackInuse"), kb("MSpanSys"), kb("MCacheSys"), kb("GCSys"), kb("BuckHashSys"), kb("OtherSys"), kb("Sys"), kb("NextGC"), ms["NumGC"], goroutines)
	fmt.Printf("RESULT memruntime n=%d services=%d heap_inuse_kb=%d heap_idle_kb=%d heap_released_kb=%d heap_alloc_kb=%d stack_inuse_kb=%d gc_sys_kb=%d other_sys_kb=%d sys_kb=%d next_gc_kb=%d\n",
		len(c.nodes), nsvc, ms["HeapInuse"]/1024, ms["HeapIdle"]/1024, ms["HeapReleased"]/1024, ms["HeapAlloc"]/1024, ms["StackInuse"]/1024,
		ms["GCSys"]/1024, ms["OtherSys"]/1024, ms["Sys"]/1024, ms["NextGC"]/1024)
	pkgs, funcs, total := heapByOwner(string(heapText))
	fmt.Printf("n1 daemon, live heap by package (the innermost frame outside the standard library; estimated from the samples): %.0f kB\n", total/1024)
	for i, p := range pkgs {
		if i == 15 {
			break
		}
		fmt.Printf("  %8.0f kB %5.1f%%  %s\n", p.bytes/1024, 100*p.bytes/total, p.name)
	}
	fmt.Println("n1 daemon, live heap by function (the same frame):")
	for i, p := range funcs {
		if i == 15 {
			break
		}
		fmt.Printf("  %8.0f kB %5.1f%%  %s\n", p.bytes/1024, 100*p.bytes/total, p.name)
	}
	if heapOut != "" {
		b, err := httpGet(base + "heap")
		if err != nil {
			return err
		}
		if err := os.WriteFile(heapOut, b, 0o644); err != nil {
			return err
		}
		fmt.Printf("heap profile of n1 in %s (go tool pprof -sample_index=inuse_space -top %s)\n", heapOut, heapOut)
	}
	return nil
}

// memBreakdown starts n daemons with nsvc failover services (idleCluster),
// n1 serving its profiler (and GODEBUG=memprofilerate=rate when rate > 0:
// every allocation of rate bytes or more sampled), leaves them settle, and
// prints memReport (with, over window when it is not 0, the rates of
// allocation and collection of n1's daemon); heapOut, when set, is the prefix of the file of n1's
// heap profile (PREFIX-<n>n-<nsvc>s.pb.gz).
func memBreakdown(n, nsvc int, monitored bool, settle, window time.Duration, o opts, rate int, heapOut string) error {
	fmt.Printf("\n## mem: %d daemon(s), %d services, monitor=%v, settle %s, window %s, n1 profiled (memprofilerate %d, 0: the default)\n", n, nsvc, monitored, settle, window, rate)
	port, err := testbed.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	env := []string{"HAVEN_PPROF_ADDR=" + addr}
	if rate > 0 {
		env = append(env, fmt.Sprintf("GODEBUG=memprofilerate=%d", rate))
	}
	c, err := idleCluster(n, nsvc, monitored, 0, o, env)
	if err != nil {
		return err
	}
	defer c.close()
	time.Sleep(settle)
	if window > 0 {
		// the allocation and collection rates of the idle daemon
		base := "http://" + addr + "/debug/pprof/heap?debug=1"
		a, err := httpGet(base)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if heapOut != "" {
			// what was allocated over the window (a delta profile)
			out := fmt.Sprintf("%s-%dn-%ds-allocs.pb.gz", heapOut, n, nsvc)
			d, err := httpGet(fmt.Sprintf("http://%s/debug/pprof/allocs?seconds=%d", addr, int(window.Seconds())))
			if err == nil {
				err = os.WriteFile(out, d, 0o644)
			}
			if err != nil {
				return err
			}
			fmt.Printf("what n1 allocated over the window in %s (go tool pprof -sample_index=alloc_space -top %s)\n", out, out)
		} else {
			time.Sleep(window)
		}
		b, err := httpGet(base)
		if err != nil {
			return err
		}
		el := time.Since(t0).Seconds()
		m0, m1 := memStats(string(a)), memStats(string(b))
		fmt.Printf("n1 daemon over %s idle: %.1f kB allocated a second, %.2f collections a second\n",
			window, float64(m1["TotalAlloc"]-m0["TotalAlloc"])/1024/el, float64(m1["NumGC"]-m0["NumGC"])/el)
		fmt.Printf("RESULT memrate n=%d services=%d alloc_kb_per_s=%.1f gc_per_s=%.3f\n", n, nsvc,
			float64(m1["TotalAlloc"]-m0["TotalAlloc"])/1024/el, float64(m1["NumGC"]-m0["NumGC"])/el)
	}
	if heapOut != "" {
		heapOut = fmt.Sprintf("%s-%dn-%ds.pb.gz", heapOut, n, nsvc)
	}
	return memReport(c, nsvc, addr, heapOut)
}
