package daemon

import "haven/api"

// upgradeStatus fills the rolling-upgrade part of `nodemgr daemon status`:
// the formats this node reads, the cluster feature level, and whether the
// next node may be upgraded now (node/upgrade.SafeNext).
func (d *Daemon) upgradeStatus(ds *api.DaemonStatus) {
	ds.Format, ds.FeatureLevel = d.core.FormatMax(), d.core.FeatureLevel()
	stateErr := ""
	if d.ps.err != nil {
		stateErr = d.ps.err.Error()
	}
	v := d.core.UpgradeVerdict(stateErr)
	ds.Upgrade, ds.UpgradeSafe = v.Reason, v.Safe
}
