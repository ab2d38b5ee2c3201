package chaos

import (
	"context"
	"crypto/ecdh"
	"fmt"
	"os"
	"slices"
	"time"

	"haven/config/tomlfile"
	"haven/heartbeat/disk"
)

// DiskInsider is the holder of one member's files (its cluster.toml, with
// the cluster secret and the members' public keys, and its node.key) who
// can write the shared disk: unlike DiskAttack's host it seals blocks, and
// it writes them as another member (docs/security.md, "One node's files
// stolen"). Every Every it writes, into the beat block of member As, a
// beat sealed with what the files give (the secret, and the stolen node's
// key pair when NodeKey is set: its tags are then its own), newer than any
// of As's runs, echoing the newest block of each member of Echo (so that
// those readers count it as written now), announcing a fence of each
// member of Fence (at its newest run read on the disk) and acknowledging
// the fences that the beats of the members of AckFences announce against
// As.
type DiskInsider struct {
	Path        string        `json:"path"`
	ClusterToml string        `json:"cluster_toml"`
	Node        string        `json:"node"`
	NodeKey     string        `json:"node_key,omitempty"`
	As          string        `json:"as"`
	Echo        []string      `json:"echo,omitempty"`
	Fence       []string      `json:"fence,omitempty"`
	AckFences   []string      `json:"ack_fences,omitempty"`
	Every       time.Duration `json:"every"`
}

// Run writes the forged beats until ctx ends and returns how many.
func (a DiskInsider) Run(ctx context.Context) (int, error) {
	c, err := tomlfile.LoadCluster(a.ClusterToml, a.Node)
	if err != nil {
		return 0, err
	}
	keys, err := disk.NewKeys(c.Name, c.Secret)
	if err != nil {
		return 0, err
	}
	members := slices.Sorted(slices.Values(c.NodeNames()))
	if a.NodeKey != "" {
		priv, err := tomlfile.LoadNodeKey(a.NodeKey)
		if err != nil {
			return 0, err
		}
		pubs := map[string]*ecdh.PublicKey{}
		for n, b := range c.NodeKeys {
			if pubs[n], err = ecdh.X25519().NewPublicKey(b); err != nil {
				return 0, err
			}
		}
		if err := keys.SetNodeKeys(a.Node, members, priv, pubs, ""); err != nil {
			return 0, err
		}
	}
	slot := func(n string) int { return slices.Index(members, n) }
	if slot(a.As) < 0 {
		return 0, fmt.Errorf("%s is not a member", a.As)
	}
	f, err := os.OpenFile(a.Path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// newest reads a member's beat as the stolen node reads it (a block
	// its keys do not open is skipped)
	newest := func(n string) (disk.Beat, bool) {
		b := make([]byte, disk.BlockSize)
		if _, err := f.ReadAt(b, disk.BeatOffset(slot(n))); err != nil {
			return disk.Beat{}, false
		}
		bt, err := keys.DecodeBeat(b, slot(n))
		return bt, err == nil && bt.Writer == n
	}
	tick := time.NewTicker(a.Every)
	defer tick.Stop()
	wrote := 0
	for counter := uint64(1); ; counter++ {
		bt := disk.Beat{Writer: a.As, Slot: slot(a.As), Run: 1 << 62, Counter: counter, Time: time.Now(), Period: a.Every, Guard: disk.GuardStops}
		for _, n := range a.Echo {
			if r, ok := newest(n); ok {
				bt.Seen = append(bt.Seen, disk.Seen{Slot: slot(n), Run: r.Run, Counter: r.Counter})
			}
		}
		for _, n := range a.Fence {
			if r, ok := newest(n); ok {
				bt.Fences = append(bt.Fences, disk.Announce{Slot: slot(n), Run: r.Run, Nonce: [disk.NonceLen]byte{0xba, 0xd}})
			}
		}
		for _, n := range a.AckFences {
			if r, ok := newest(n); ok {
				for _, fa := range r.Fences {
					if fa.Slot == slot(a.As) {
						bt.Acks = append(bt.Acks, disk.Ack{Slot: slot(n), Nonce: fa.Nonce})
					}
				}
			}
		}
		if _, err := f.WriteAt(keys.EncodeBeat(bt), disk.BeatOffset(slot(a.As))); err != nil {
			return wrote, err
		}
		wrote++
		select {
		case <-ctx.Done():
			return wrote, nil
		case <-tick.C:
		}
	}
}
