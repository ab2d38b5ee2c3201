package config

import (
	"path"
	"time"
)

// checkHBDisk checks [hb.disk] and node.watchdog_device in node.toml.
func (d *document) checkHBDisk(c *NodeConfig, node, sec *section) error {
	disk := c.HB.Disk
	if disk.Path != "" && !path.IsAbs(disk.Path) {
		return d.errAt(sec, "path", "%q is not an absolute path", disk.Path)
	}
	if disk.Fence && disk.Path == "" {
		return d.errAt(sec, "fence", "fencing through the disk needs hb.disk.path (the shared disk)")
	}
	if disk.Timeout <= 0 {
		return d.errAt(sec, "timeout", "must be more than 0")
	}
	if beat := DiskBeatPeriod(c.HB); disk.Path != "" && disk.Timeout <= beat {
		return d.errAt(sec, "timeout", "%s must be longer than the beat period %s (the disk's rounds: hb.interval, or hb.timeout/6 when shorter): the disk would be lost between two rounds",
			disk.Timeout, beat)
	}
	if c.WatchdogDevice != "" && !path.IsAbs(c.WatchdogDevice) {
		return d.errAt(node, "watchdog_device", "%q is not an absolute path", c.WatchdogDevice)
	}
	return nil
}

// BeatsPerTimeout beats at least go out within one hb.timeout. A live peer
// is declared down only when every beat of the window AND every probe round
// trip that its silence started are lost (heartbeat's probes: from one and
// a half beat periods of silence on, 16 a window). With beats alone, 3 a
// window made the chaos suite's LossyNetwork (20 % loss) see false node
// downs (0.8 % a window), and the beat period was hb.timeout/6 until the
// probes came; with the probes, 3 beats a window lose all of them (2 or 3
// after the last one heard) and the 16 probe round trips with a chance of
// at most 0.2^2 x 0.36^16 (3e-9) at 20 % loss, for half the idle
// wake-ups and traffic of 6 (docs/benchmarks.md).
const BeatsPerTimeout = 3

// BeatPeriod is the heartbeat's beat period: hb.interval, or
// hb.timeout/BeatsPerTimeout when shorter.
func BeatPeriod(hb HBConfig) time.Duration { return period(hb, BeatsPerTimeout) }

// DiskBeatPeriod is the period of the disk heartbeat's rounds: hb.interval,
// or hb.timeout/6 when shorter. The network heartbeat went to three beats
// a timeout when its probes came (BeatPeriod); the disk has no probes, so
// it keeps six rounds a timeout (and every hb.disk.timeout valid before
// stays valid).
func DiskBeatPeriod(hb HBConfig) time.Duration { return period(hb, 6) }

// period is hb.interval, or hb.timeout/perTimeout when shorter.
func period(hb HBConfig, perTimeout time.Duration) time.Duration {
	beat := hb.Interval
	if t := hb.Timeout / perTimeout; t > 0 && t < beat {
		beat = t
	}
	return beat
}

// checkHBDiskCluster checks [hb.disk] against cluster.toml: fencing
// through the disk acts only on the takeover gates of the quorum.
func checkHBDiskCluster(n *NodeConfig, c *ClusterConfig) error {
	if n.HB.Disk.Fence && !c.Quorum {
		e := &Error{File: n.File, Key: SectionHBDisk + ".fence", Msg: "fencing through the disk needs cluster.quorum = true in " + c.File +
			" (without the quorum a lost node's services are taken over at once, nothing waits for a fence)"}
		if n.lines != nil {
			e.Line = n.lines.find([]string{"hb", "disk"}, "fence")
		}
		return e
	}
	return nil
}
