package daemon

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"haven/dataset"
	"haven/heartbeat/disk"
)

// What the disk heartbeat shows: its state and each
// peer's slot in the status object (svcmon's Heartbeat section), in
// `nodemgr daemon status` and in the metrics. With fence = false the disk
// is also the heartbeat link "disk" of every peer (links.go).

// diskStatus is this node's view of the disk heartbeat, nil without
// [hb.disk]. On the loop.
func (d *Daemon) diskStatus(now time.Time) *dataset.HBDisk {
	dk := d.node.HB.Disk
	if dk.Path == "" || d.sbd == nil {
		return nil
	}
	st := &dataset.HBDisk{Path: dk.Path, Fence: dk.Fence}
	dsk := d.sbd.disk
	if dsk == nil {
		return st // not open yet: retried (sbd.go)
	}
	st.Open, st.Reachable, st.NotOwnKey = true, dsk.Reachable(), dsk.NotOwnKey()
	for _, name := range d.core.PeerNames() {
		ps, ok := dsk.Peer(name)
		if !ok {
			continue
		}
		if st.Slots == nil {
			st.Slots = map[string]dataset.HBDiskSlot{}
		}
		st.Slots[name] = diskSlot(ps, now, dk.Timeout)
	}
	return st
}

func diskSlot(ps disk.PeerSlot, now time.Time, timeout time.Duration) dataset.HBDiskSlot {
	s := dataset.HBDiskSlot{LastAdvanceMs: -1, Err: ps.Err}
	if !ps.LastAdvance.IsZero() {
		age := max(0, now.Sub(ps.LastAdvance))
		s.LastAdvanceMs, s.Alive = age.Milliseconds(), age <= timeout
	}
	return s
}

var (
	descDiskReachable = prometheus.NewDesc("haven_hb_disk_reachable",
		"1 when the disk heartbeat ([hb.disk]) had a good round within hb.disk.timeout, 0 when it is lost or not open.", []string{"path"}, nil)
	descDiskSlotAge = prometheus.NewDesc("haven_hb_disk_slot_advanced_seconds",
		"Seconds since the peer's slot on the shared disk last advanced (absent when never seen advancing).", []string{"peer"}, nil)
	descDiskNotOwnKey = prometheus.NewDesc("haven_hb_disk_blocks_not_own_key_total",
		"Reads of a slot of the shared disk that refused a block not authenticated with its writer's node key (per-node keys).", []string{"path"}, nil)
)

// collectDisk sets the disk heartbeat's metrics (at a scrape, off the
// loop: the disk's methods lock).
func collectDisk(ch chan<- prometheus.Metric, path string, dsk *disk.Disk, peers []string, now time.Time) {
	if path == "" {
		return
	}
	up := dsk != nil && dsk.Reachable()
	ch <- prometheus.MustNewConstMetric(descDiskReachable, prometheus.GaugeValue, b2f(up), path)
	if dsk == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descDiskNotOwnKey, prometheus.CounterValue, float64(dsk.NotOwnKey()), path)
	for _, p := range peers {
		if ps, ok := dsk.Peer(p); ok && !ps.LastAdvance.IsZero() {
			ch <- prometheus.MustNewConstMetric(descDiskSlotAge, prometheus.GaugeValue, now.Sub(ps.LastAdvance).Seconds(), p)
		}
	}
}

// explainDisk are the disk heartbeat's notes on the given nodes (svcmgr
// explain): the disk lost here, a peer whose slot stands still, a peer
// heard on the disk only (a network split with the disk alive).
func (d *Daemon) explainDisk(nodes []string) []string {
	st := d.diskStatus(d.clk.Now())
	if st == nil {
		return nil
	}
	var out []string
	switch {
	case !st.Open:
		out = append(out, "disk: not open yet (retried): no disk heartbeat here")
	case !st.Reachable:
		out = append(out, "disk: LOST here (no good round within hb.disk.timeout)")
	}
	up := map[string]bool{}
	if d.hb != nil {
		for _, p := range d.hb.Peers() {
			netUp := false
			for _, l := range p.Links {
				netUp = netUp || l.Up && l.Name != disk.LinkName
			}
			up[p.Name] = netUp || len(p.Links) == 0 && p.Up
		}
	}
	for _, n := range nodes {
		sl, ok := st.Slots[n]
		if !ok {
			continue
		}
		switch {
		case sl.Alive && !up[n]:
			out = append(out, fmt.Sprintf("%s: silent on every network link but its disk slot advances (a network split, the disk alive)", n))
		case !sl.Alive && sl.LastAdvanceMs >= 0:
			out = append(out, fmt.Sprintf("%s: its disk slot has not advanced for %.1fs", n, float64(sl.LastAdvanceMs)/1000))
		case sl.Err != "":
			out = append(out, fmt.Sprintf("%s: its disk slot cannot be read: %s", n, sl.Err))
		}
	}
	return out
}
