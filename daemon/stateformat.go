package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"

	"haven/config"
	"haven/node"
	"haven/node/upgrade"
)

// The versions of the state file (node/upgrade, docs/operations.md
// "Upgrading"). The file is written in the format of the cluster feature
// level:
//
//	level 1: {"version": 1, "sha256": ..., "state": {...}}    (the first release's)
//	level 2: {"requires_feature_level": 2, "version": 2, "sha256": ..., "state": {...}}
//
// A release reads the versions from upgrade.Previous to upgrade.Current.
// The first release refuses an unknown envelope key, naming it and the
// file, before it looks at the version: requires_feature_level is the
// key it then names, so that a node taken back to it after the level
// moved refuses to start instead of running on formats it cannot read.

// levelKey is the envelope key of the cluster feature level (version 2).
const levelKey = "requires_feature_level"

// stateVersionMax is the newest envelope version read.
const stateVersionMax = upgrade.Current

// newerStateRemedy ends the error about a state file of a newer release.
const newerStateRemedy = "this node ran a newer release of Haven and the cluster feature level moved past what this release reads, " +
	"so it cannot go back to this release: install the newer release again (docs/operations.md, \"Upgrading\")"

// envelopeVersion is the envelope version written at a feature level.
func envelopeVersion(level int) int {
	return min(max(level, stateVersion), stateVersionMax)
}

// writeEnvelopeHead writes the envelope up to the state object.
func writeEnvelopeHead(b *bytes.Buffer, level int, sum string) {
	v := envelopeVersion(level)
	b.WriteString("{\n")
	if v >= 2 {
		fmt.Fprintf(b, "  %q: %d,\n", levelKey, max(level, 2))
	}
	fmt.Fprintf(b, "  \"version\": %d,\n  \"sha256\": %q,\n  \"state\": ", v, sum)
}

// newerEnvelope refuses, before anything else is looked at, a state file
// a newer release wrote: an envelope version or a feature level beyond
// this release's.
func newerEnvelope(top map[string]json.RawMessage) error {
	var version, level int
	if json.Unmarshal(top["version"], &version) == nil && version > stateVersionMax {
		return &stateError{key: "version", newer: true, msg: fmt.Sprintf("state format version %d, written by a newer release: this release reads versions %d to %d", version, stateVersion, stateVersionMax)}
	}
	if json.Unmarshal(top[levelKey], &level) == nil && level > upgrade.Current {
		return &stateError{key: levelKey, newer: true, msg: fmt.Sprintf("written at cluster feature level %d: this release reads formats up to %d", level, upgrade.Current)}
	}
	return nil
}

// envelopeLevel checks the version and the feature level of an envelope
// and returns the level (1 for version 1).
func envelopeLevel(version int, top map[string]json.RawMessage) (int, error) {
	raw, has := top[levelKey]
	switch {
	case version < stateVersion:
		return 0, &stateError{key: "version", msg: fmt.Sprintf("state format version %d: this release reads versions %d to %d", version, stateVersion, stateVersionMax)}
	case version == 1 && has:
		return 0, &stateError{key: levelKey, msg: "not part of a version 1 envelope"}
	case version == 1:
		return 1, nil
	case !has:
		return 0, &stateError{key: levelKey, msg: fmt.Sprintf("missing from a version %d envelope", version)}
	}
	var level int
	if err := json.Unmarshal(raw, &level); err != nil || level < 2 {
		return 0, &stateError{key: levelKey, msg: "want a number of 2 or more"}
	}
	return level, nil
}

// checkStateLevel refuses a state whose feature level is beyond the
// formats this node reads (format: upgrade.Current, or HAVEN_FORMAT).
func checkStateLevel(path string, level, format int) error {
	if level <= format {
		return nil
	}
	return &config.Error{File: path, Key: levelKey, Msg: fmt.Sprintf("written at cluster feature level %d: this node reads formats up to %d: %s", level, format, newerStateRemedy)}
}

// withoutUnknown drops, at feature level 1, the fields of a newer release
// that the targets and clears kept (dataset.Unknown), and the fields the
// first release's state does not have: the first release refuses a state
// file with a key it does not know, and a node at level 1 may be taken
// back to it. From level 2 on they are written, and read back. A split
// freeze is written as the node's freeze then (the first release knows no
// other: it stays frozen until an admin thaws it, as it did), and a
// monitor_action held for want of a candidate is dropped (the ladder
// stays given up, as it did), and so are the rollout's fields (the config
// an instance runs, the rollout record, this node's turn and the previous
// config kept for a rollback: a node at level 1 may hold a rollout of its own nodes of this release; taken back
// to the first release, it forgets it), and the times of the restarts a
// restart_window counts (the count stays, as the first release kept it).
// The admin signatures of targets and tombstones and the targets' serial
// floor go too: they are needed from level 2 on only (node/configsigned.go).
func withoutUnknown(d durable) durable {
	if envelopeVersion(d.FeatureLevel) >= 2 {
		return d
	}
	d.TombstoneSigs = nil
	if d.SplitFrozen {
		if !d.NodeFrozen {
			d.NodeFrozen, d.NodeFrozenReason = true, d.SplitFrozenReason
		}
		d.SplitFrozen, d.SplitFrozenReason = false, ""
	}
	strip := false
	for _, s := range d.Services {
		strip = strip || s.Target.Unknown != "" || s.Target.Sig != "" || s.TargetSerial != 0 || s.Clear.Unknown != "" || s.ActionHeld != "" ||
			s.RunDigest != "" || s.Rollout != nil || s.RolloutMark != nil || s.Previous != nil
		for _, r := range s.Restarts {
			strip = strip || len(r.At) > 0
		}
	}
	if !strip {
		return d
	}
	svcs := make(map[string]durableService, len(d.Services))
	for k, s := range d.Services {
		s.Target.Unknown, s.Clear.Unknown, s.ActionHeld = "", "", ""
		s.Target.Sig, s.TargetSerial = "", 0
		s.RunDigest, s.Rollout, s.RolloutMark, s.Previous = "", nil, nil, nil
		if len(s.Restarts) > 0 {
			rs := make(map[string]node.RestartCount, len(s.Restarts))
			for rid, r := range s.Restarts {
				r.At = nil // the count stays: the restarts spent, as before a window
				rs[rid] = r
			}
			s.Restarts = rs
		}
		svcs[k] = s
	}
	d.Services = svcs
	return d
}
