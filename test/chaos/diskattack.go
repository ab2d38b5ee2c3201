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
//   - Replay: writes each block of Replay (slot offset -> block) once,
//     when the attack begins.
type DiskAttack struct {
	Path        string           `json:"path"`
	Slots       int              `json:"slots"`
	Hold        []int            `json:"hold,omitempty"`
	EraseFences bool             `json:"erase_fences,omitempty"`
	Replay      map[int64][]byte `json:"replay,omitempty"`
	Poll        time.Duration    `json:"poll,omitempty"`
	Delay       time.Duration    `json:"delay,omitempty"`
}

// DiskAttackEnv names the environment variable that makes a test binary
// run DiskAttackerMain instead of its tests (the attacker then runs as a
// process of its own).
const DiskAttackEnv = "HAVEN_DISK_ATTACK"

// Run attacks until ctx ends. It returns the number of blocks it wrote.
func (a DiskAttack) Run(ctx context.Context) (int, error) {
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
	for off, b := range a.Replay {
		if err := write(b, off); err != nil {
			return wrote, err
		}
	}
	held := map[int64][]byte{}
	for _, s := range a.Hold {
		held[disk.BeatOffset(s)] = read(disk.BeatOffset(s))
	}
	zero := make([]byte, disk.BlockSize)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
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
