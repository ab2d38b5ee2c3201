package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"haven/heartbeat/disk"
)

// DiskAttack is a host that reads and writes the shared disk of the disk
// heartbeat ([hb.disk]) but lacks the cluster secret: it knows the layout
// (docs/operations.md, "Disk heartbeat") and copies, writes back and
// erases blocks; it cannot seal one. It polls the disk every Poll and:
//
//   - Hold: keeps each listed member's beat block at the block it held
//     when the attack began, writing it back Delay after it saw the
//     member write another one (a member that reads its block back at
//     once sees its own);
//   - EraseFences: zeroes every fence block that is not zero;
//   - Replay: writes each block of Replay (slot offset -> block) when the
//     attack begins, and again every ReplayEvery (0: once);
//   - Record: appends to the file Record each new block it sees in the
//     beat block of slot RecordSlot (a recording of a member's beats);
//   - Play: writes the blocks of the recording Play (a file of blocks)
//     into the beat block of slot PlaySlot, one every PlayEvery, in
//     order, from the start again after the last.
type DiskAttack struct {
	Path        string           `json:"path"`
	Slots       int              `json:"slots"`
	Hold        []int            `json:"hold,omitempty"`
	EraseFences bool             `json:"erase_fences,omitempty"`
	Replay      map[int64][]byte `json:"replay,omitempty"`
	ReplayEvery time.Duration    `json:"replay_every,omitempty"`
	Record      string           `json:"record,omitempty"`
	RecordSlot  int              `json:"record_slot,omitempty"`
	Play        string           `json:"play,omitempty"`
	PlaySlot    int              `json:"play_slot,omitempty"`
	PlayEvery   time.Duration    `json:"play_every,omitempty"`
	Poll        time.Duration    `json:"poll,omitempty"`
	Delay       time.Duration    `json:"delay,omitempty"`
	// Insider, when set, is the attack instead: one member's files
	// writing as another member (diskinsider.go).
	Insider *DiskInsider `json:"insider,omitempty"`
}

// DiskAttackEnv names the environment variable that makes a test binary
// run DiskAttackerMain instead of its tests (the attacker then runs as a
// process of its own).
const DiskAttackEnv = "HAVEN_DISK_ATTACK"

// Run attacks until ctx ends. It returns the number of blocks it wrote.
func (a DiskAttack) Run(ctx context.Context) (int, error) {
	if a.Insider != nil {
		return a.Insider.Run(ctx)
	}
	f, err := os.OpenFile(a.Path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	poll := a.Poll
	if poll <= 0 {
		poll = time.Millisecond
	}
	read := func(off int64) []byte {
		b := make([]byte, disk.BlockSize)
		n, _ := f.ReadAt(b, off)
		return b[:n]
	}
	wrote := 0
	write := func(b []byte, off int64) error {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		wrote++
		return nil
	}
	replay := func() error {
		for off, b := range a.Replay {
			if err := write(b, off); err != nil {
				return err
			}
		}
		return nil
	}
	if err := replay(); err != nil {
		return wrote, err
	}
	replayed := time.Now()
	held := map[int64][]byte{}
	for _, s := range a.Hold {
		held[disk.BeatOffset(s)] = read(disk.BeatOffset(s))
	}
	var rec *os.File
	var last []byte
	if a.Record != "" {
		if rec, err = os.OpenFile(a.Record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return wrote, err
		}
		defer rec.Close()
	}
	var play [][]byte
	if a.Play != "" {
		b, err := os.ReadFile(a.Play)
		if err != nil {
			return wrote, err
		}
		for len(b) >= disk.BlockSize {
			play, b = append(play, b[:disk.BlockSize]), b[disk.BlockSize:]
		}
	}
	played, next := time.Time{}, 0
	zero := make([]byte, disk.BlockSize)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if a.ReplayEvery > 0 && time.Since(replayed) >= a.ReplayEvery {
			if err := replay(); err != nil {
				return wrote, err
			}
			replayed = time.Now()
		}
		if rec != nil {
			if b := read(disk.BeatOffset(a.RecordSlot)); len(b) == disk.BlockSize && !bytes.Equal(b, last) && !bytes.Equal(b, zero) {
				if _, err := rec.Write(b); err != nil {
					return wrote, err
				}
				last = b
			}
		}
		if len(play) > 0 && time.Since(played) >= a.PlayEvery {
			if err := write(play[next], disk.BeatOffset(a.PlaySlot)); err != nil {
				return wrote, err
			}
			played, next = time.Now(), (next+1)%len(play)
		}
		for off, b := range held {
			if !bytes.Equal(read(off), b) {
				time.Sleep(a.Delay)
				if err := write(b, off); err != nil {
					return wrote, err
				}
			}
		}
		if a.EraseFences {
			for s := range a.Slots {
				if b := read(disk.FenceOffset(s)); len(b) > 0 && !bytes.Equal(b, zero[:len(b)]) {
					if err := write(zero, disk.FenceOffset(s)); err != nil {
						return wrote, err
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return wrote, nil
		case <-tick.C:
		}
	}
}

// DiskAttackerMain runs the attack described in JSON by the environment
// variable DiskAttackEnv until SIGTERM or SIGINT, then prints the number of
// blocks written. It returns the process's exit status.
func DiskAttackerMain() int {
	var a DiskAttack
	if err := json.Unmarshal([]byte(os.Getenv(DiskAttackEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "disk attacker:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := a.Run(ctx)
	fmt.Printf("disk attacker: %d blocks written\n", n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "disk attacker:", err)
		return 1
	}
	return 0
}
