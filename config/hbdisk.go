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
	if beat := BeatPeriod(c.HB); disk.Path != "" && disk.Timeout <= beat {
		return d.errAt(sec, "timeout", "%s must be longer than the beat period %s (hb.interval, or hb.timeout/6 when shorter): the disk would be lost between two rounds",
			disk.Timeout, beat)
	}
	if c.WatchdogDevice != "" && !path.IsAbs(c.WatchdogDevice) {
		return d.errAt(node, "watchdog_device", "%q is not an absolute path", c.WatchdogDevice)
	}
	return nil
}

// BeatPeriod is the heartbeat's beat period: hb.interval, or hb.timeout/6
// when shorter.
func BeatPeriod(hb HBConfig) time.Duration {
	beat := hb.Interval
	if t := hb.Timeout / 6; t > 0 && t < beat {
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
