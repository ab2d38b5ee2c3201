// Command hbbench measures the heartbeat on loopback with real memberlist
// nodes: propagation of a Publish (p50/p99 over every receiver) and the time
// from a kill -9 of a node to its Down event on the others.
//
//	go run ./cmd/hbbench -sizes 3,16 -detect 2,3,16 -timeout 5s -interval 1s
//
// The killed node runs in a child process (this program re-executed).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/dataset"
	"haven/heartbeat"
	"haven/test/testbed"
)

const childEnv = "HAVEN_HBBENCH_CHILD"

// logger is nil (silent) unless -v.
var logger *zap.Logger

const secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func main() {
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(spec)
		return
	}
	sizes := flag.String("sizes", "3,16", "cluster sizes for propagation")
	detect := flag.String("detect", "2,3,16", "cluster sizes for down detection")
	samples := flag.Int("samples", 300, "publications per propagation run")
	trials := flag.Int("trials", 2, "kills per detection size")
	timeout := flag.Duration("timeout", 5*time.Second, "hb.timeout")
	interval := flag.Duration("interval", time.Second, "hb.interval")
	verbose := flag.Bool("v", false, "log the heartbeats' debug lines to stderr")
	flag.Parse()
	if *verbose {
		logger = zap.Must(zap.NewDevelopment())
	}
	for _, n := range ints(*sizes) {
		if err := propagation(n, *samples, *timeout, *interval); err != nil {
			fmt.Fprintln(os.Stderr, "propagation:", err)
			os.Exit(1)
		}
	}
	for _, n := range ints(*detect) {
		for range *trials {
			if err := detection(n, *timeout, *interval); err != nil {
				fmt.Fprintln(os.Stderr, "detection:", err)
				os.Exit(1)
			}
		}
	}
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 1 {
			out = append(out, n)
		}
	}
	return out
}

func members(n int) ([]config.Member, error) {
	var ms []config.Member
	for len(ms) < n {
		port, err := testbed.FreePort()
		if err != nil {
			return nil, err
		}
		ms = append(ms, config.Member{Name: fmt.Sprintf("n%02d", len(ms)+1), Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	return ms, nil
}

func cfg(ms []config.Member, name string, timeout, interval time.Duration) heartbeat.Config {
	return heartbeat.Config{Node: name, BindAddr: "127.0.0.1", Members: ms, ClusterName: "bench",
		Secret: secret, Timeout: timeout, Interval: interval, Logger: logger}
}

func node(name string, gen uint64) dataset.Node {
	n := dataset.Node{Name: name, Monitor: dataset.NodeIdle, Compat: 1, Gen: gen,
		Services: map[string]dataset.Instance{}}
	for i := range 20 {
		n.Services[fmt.Sprintf("svc%02d", i)] = dataset.Instance{Avail: dataset.StatusUp, Overall: dataset.StatusUp}
	}
	n.Load15 = float64(gen) // the change: a delta of the node header
	return n
}

// recorder timestamps the events of one node.
type recorder struct {
	mu   sync.Mutex
	data map[string]map[uint64]time.Time // sender -> gen -> first arrival
	up   map[string]time.Time
	down map[string]time.Time
}

func record(h heartbeat.Heartbeat) *recorder {
	r := &recorder{data: map[string]map[uint64]time.Time{}, up: map[string]time.Time{}, down: map[string]time.Time{}}
	go func() {
		for ev := range h.Events() {
			now := time.Now()
			r.mu.Lock()
			switch ev.Kind {
			case heartbeat.Data:
				if r.data[ev.Node] == nil {
					r.data[ev.Node] = map[uint64]time.Time{}
				}
				if _, ok := r.data[ev.Node][ev.Data.Gen]; !ok {
					r.data[ev.Node][ev.Data.Gen] = now
				}
			case heartbeat.Up:
				r.up[ev.Node] = now
			case heartbeat.Down:
				r.down[ev.Node] = now
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) get(f func(r *recorder) (time.Time, bool)) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

// waitAll polls until ok holds for every recorder or the deadline passes.
func waitAll(rs []*recorder, within time.Duration, ok func(r *recorder) (time.Time, bool)) ([]time.Time, bool) {
	deadline := time.Now().Add(within)
	for {
		var ts []time.Time
		for _, r := range rs {
			if t, yes := r.get(ok); yes {
				ts = append(ts, t)
			}
		}
		if len(ts) == len(rs) {
			return ts, true
		}
		if time.Now().After(deadline) {
			return ts, false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func propagation(n, samples int, timeout, interval time.Duration) error {
	ms, err := members(n)
	if err != nil {
		return err
	}
	hbs := make([]heartbeat.Heartbeat, n)
	recs := make([]*recorder, n)
	for i, m := range ms {
		if hbs[i], err = heartbeat.NewMemberlist(cfg(ms, m.Name, timeout, interval)); err != nil {
			return err
		}
		defer hbs[i].Close()
		recs[i] = record(hbs[i])
		hbs[i].Publish(node(m.Name, 1))
	}
	for i, m := range ms {
		others := slices.Delete(slices.Clone(recs), i, i+1)
		if _, ok := waitAll(others, 10*time.Second, func(r *recorder) (time.Time, bool) {
			t, ok := r.data[m.Name][1]
			return t, ok
		}); !ok {
			return fmt.Errorf("%d nodes: %s not seen by all", n, m.Name)
		}
	}
	var lat []time.Duration
	gens := make([]uint64, n)
	for i := range gens {
		gens[i] = 1
	}
	for s := range samples {
		i := s % n
		gens[i]++
		g, name := gens[i], ms[i].Name
		start := time.Now()
		hbs[i].Publish(node(name, g))
		others := slices.Delete(slices.Clone(recs), i, i+1)
		ts, ok := waitAll(others, 2*time.Second, func(r *recorder) (time.Time, bool) {
			t, ok := r.data[name][g]
			return t, ok
		})
		if !ok {
			var miss []string
			for j, r := range recs {
				if _, yes := r.get(func(r *recorder) (time.Time, bool) { t, ok := r.data[name][g]; return t, ok }); !yes && j != i {
					miss = append(miss, fmt.Sprintf("%s sees %+v; %s sees %+v; stats %+v", ms[j].Name, peer(hbs[j], name), name, peer(hbs[i], ms[j].Name), hbs[j].Stats()))
				}
			}
			return fmt.Errorf("%d nodes: gen %d of %s reached %d of %d peers in 2s:\n%s", n, g, name, len(ts), n-1, strings.Join(miss, "\n"))
		}
		for _, t := range ts {
			lat = append(lat, t.Sub(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(lat)
	var st heartbeat.Stats
	for _, h := range hbs {
		s := h.Stats()
		st.Sent += s.Sent
		st.BytesSent += s.BytesSent
		st.NeedsSent += s.NeedsSent
		st.Dropped += s.Dropped
	}
	fmt.Printf("propagation %2d nodes: %d deliveries  p50 %-10v p99 %-10v max %-10v  (frames %d, bytes %d, needs %d, dropped %d)\n",
		n, len(lat), pct(lat, 50), pct(lat, 99), lat[len(lat)-1], st.Sent, st.BytesSent, st.NeedsSent, st.Dropped)
	return nil
}

func peer(h heartbeat.Heartbeat, name string) heartbeat.Peer {
	for _, p := range h.Peers() {
		if p.Name == name {
			return p
		}
	}
	return heartbeat.Peer{}
}

func pct(d []time.Duration, p int) time.Duration {
	return d[min(len(d)-1, len(d)*p/100)].Round(time.Microsecond)
}

func detection(n int, timeout, interval time.Duration) error {
	ms, err := members(n)
	if err != nil {
		return err
	}
	victim := ms[n-1].Name
	var recs []*recorder
	for _, m := range ms[:n-1] {
		h, err := heartbeat.NewMemberlist(cfg(ms, m.Name, timeout, interval))
		if err != nil {
			return err
		}
		defer h.Close()
		recs = append(recs, record(h))
		h.Publish(node(m.Name, 1))
	}
	spec, _ := json.Marshal(cfg(ms, victim, timeout, interval))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait()
	if _, ok := waitAll(recs, 10*time.Second, func(r *recorder) (time.Time, bool) {
		t, ok := r.up[victim]
		return t, ok
	}); !ok {
		cmd.Process.Kill()
		return fmt.Errorf("%d nodes: %s never up", n, victim)
	}
	time.Sleep(time.Second)
	killed := time.Now()
	cmd.Process.Kill()
	ts, ok := waitAll(recs, timeout+5*time.Second, func(r *recorder) (time.Time, bool) {
		t, ok := r.down[victim]
		return t, ok && t.After(killed)
	})
	if !ok {
		return fmt.Errorf("%d nodes: down seen by %d of %d", n, len(ts), n-1)
	}
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(killed))
	}
	slices.Sort(ds)
	fmt.Printf("detection   %2d nodes: kill -9 -> down  min %-10v max %-10v  (timeout %v; max - timeout %v)\n",
		n, ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), timeout,
		(ds[len(ds)-1] - timeout).Round(time.Millisecond))
	return nil
}

func runChild(spec string) {
	var c heartbeat.Config
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h, err := heartbeat.NewMemberlist(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h.Publish(node(c.Node, 1))
	for {
		time.Sleep(time.Hour)
	}
}
