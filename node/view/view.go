// Package view holds the pure rules by which a node judges its peers from
// what it heard: node status (up, down, maintenance with its grace,
// shutting), the end of the rejoin state, and compat agreement; and how a
// node turns what it knows into the decision core's snapshot, and an admin
// action into a target. The daemon and the in-process simulation share
// them, so the simulation proves the daemon's rules. Pure: no IO, no clock
// (now is passed in); checked by monitor's TestCorePackagesArePure.
package view

import (
	"time"

	"haven/dataset"
)

// Peer is what a node knows of one peer.
type Peer struct {
	// Data is the peer's last dataset, nil when never heard.
	Data *dataset.Node
	// Up is the heartbeat's verdict: heard within hb.timeout.
	Up bool
	// MaintSince is when the peer was first seen announcing maintenance.
	MaintSince time.Time
	// Stale is set when the peer is declared down (NoteDown) and cleared by
	// the next data heard from it (NoteData): the data held was heard before
	// the peer was lost, and does not say what runs there now. While the
	// peer is up again but stale (it came back, its new data not yet heard
	// or confirmed), its instances count as unknown: neither up nor down.
	Stale bool
}

// NoteDown updates p when the heartbeat declares the peer down.
func NoteDown(p Peer) Peer {
	p.Up = false
	if p.Data != nil {
		p.Stale = true
	}
	return p
}

// Unconfirmed reports whether the peer is heard but its data was heard
// before it was lost: the data of a node that came back, before it was
// confirmed or replaced.
func Unconfirmed(p Peer) bool { return p.Up && p.Stale }

// Status is the node status of a peer as the observer concludes it. A peer
// in maintenance keeps its status (and its last data counts) for grace after
// it announced it, heard or not; then it is down. A shutting peer is
// shutting while heard, then down.
func Status(p Peer, now time.Time, grace time.Duration) dataset.NodeStatus {
	if p.Data == nil {
		if p.Up {
			return dataset.NodeUp
		}
		return dataset.NodeStUnknown
	}
	switch p.Data.Monitor {
	case dataset.NodeMaintenance:
		if p.Up || now.Sub(p.MaintSince) < grace {
			return dataset.NodeStMaint
		}
		return dataset.NodeDown
	case dataset.NodeShutting:
		if p.Up {
			return dataset.NodeStShutting
		}
		return dataset.NodeDown
	}
	if p.Up {
		return dataset.NodeUp
	}
	return dataset.NodeDown
}

// NoteData updates p with newly heard data at now (maintenance start).
func NoteData(p Peer, data *dataset.Node, now time.Time) Peer {
	p.Up = true
	if data.Monitor == dataset.NodeMaintenance {
		if p.MaintSince.IsZero() {
			p.MaintSince = now
		}
	} else {
		p.MaintSince = time.Time{}
	}
	p.Data = data
	p.Stale = false
	return p
}

// RejoinVerdict says how a node in rejoin goes on.
type RejoinVerdict int

const (
	// StayRejoin: keep waiting.
	StayRejoin RejoinVerdict = iota
	// RejoinDone: every member was heard from; go idle.
	RejoinDone
	// RejoinFreeze: the grace ended with members never heard from: freeze
	// the node so that a half-rebooted cluster never starts services twice.
	RejoinFreeze
)

// Rejoin decides the end of the rejoin state from the members never heard
// from, the daemon's start and the rejoin grace period.
func Rejoin(missing int, started, now time.Time, grace time.Duration) RejoinVerdict {
	if missing == 0 {
		return RejoinDone
	}
	if now.Sub(started) < grace {
		return StayRejoin
	}
	return RejoinFreeze
}

// CompatOK reports whether every live peer announces the local compat.
func CompatOK(local int, peers map[string]Peer) bool {
	for _, p := range peers {
		if p.Up && p.Data != nil && p.Data.Compat != local {
			return false
		}
	}
	return true
}
