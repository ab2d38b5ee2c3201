package resource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The pure parts of the fs driver: /proc/self/mountinfo, the device
// numbers of /proc/PID/maps, and the search of the processes that hold a
// filesystem (what `fuser -m` does), written against a /proc directory so
// that the tests can point it anywhere.

// devNum is a device number split in its major and minor parts, as
// mountinfo and maps show it.
type devNum struct{ major, minor uint32 }

func (d devNum) String() string { return fmt.Sprintf("%d:%d", d.major, d.minor) }

// devOf splits a stat st_dev or st_rdev.
func devOf(dev uint64) devNum { return devNum{unix.Major(dev), unix.Minor(dev)} }

// mountEntry is one line of /proc/PID/mountinfo (see proc(5)).
type mountEntry struct {
	dev        devNum // st_dev of the files of the mount
	root       string // the directory of the filesystem mounted here ("/" unless a bind mount)
	mountPoint string
	fsType     string
	source     string // "/dev/sdb1", "tmpfs", "server:/export"
}

// parseMountinfo reads a mountinfo file:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// The paths have their blanks and backslashes escaped as octal (\040);
// they are unescaped. A malformed line is an error naming it.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 6 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("mountinfo line %d: malformed: %q", n, line)
		}
		maj, min, ok := strings.Cut(f[2], ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("mountinfo line %d: bad device %q", n, f[2])
		}
		out = append(out, mountEntry{
			dev:        devNum{uint32(ma), uint32(mi)},
			root:       unescapeOctal(f[3]),
			mountPoint: unescapeOctal(f[4]),
			fsType:     unescapeOctal(f[sep+1]),
			source:     unescapeOctal(f[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	return out, nil
}

// unescapeOctal turns the \NNN sequences of the kernel's mount tables into
// their bytes (\040 space, \011 tab, \012 newline, \134 backslash). A
// backslash not followed by three octal digits is kept as is.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]) {
			v := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// readMountinfo reads the mount table of this process's mount namespace.
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

// fsState is where a device stands in a mount table, for one mount point.
type fsState struct {
	// top is the mount visible at the mount point (the last one mounted
	// there), nil when nothing is mounted there.
	top *mountEntry
	// ours: top is the device.
	ours bool
	// elsewhere lists the other mount points of the device.
	elsewhere []string
}

// evalState finds in entries the mount at mnt and the mounts of the device
// that match recognises.
func evalState(entries []mountEntry, mnt string, match func(mountEntry) bool) fsState {
	var st fsState
	seen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		mine := match(*e)
		if e.mountPoint == mnt {
			st.top, st.ours = e, mine
			continue
		}
		if mine && !seen[e.mountPoint] {
			seen[e.mountPoint] = true
			st.elsewhere = append(st.elsewhere, e.mountPoint)
		}
	}
	return st
}

// parseMapsDevs returns the devices of the file mappings of a
// /proc/PID/maps ("addr perms offset MAJ:MIN inode path", hexadecimal
// device numbers); anonymous mappings (inode 0) are left out.
func parseMapsDevs(data []byte) []devNum {
	var out []devNum
	seen := map[devNum]bool{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 5 || f[4] == "0" {
			continue
		}
		maj, min, ok := strings.Cut(f[3], ":")
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		d := devNum{uint32(ma), uint32(mi)}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// holder is a process that uses a filesystem.
type holder struct {
	pid  int
	comm string // its command name, from /proc/PID/comm
	how  string // "cwd", "root", "fd 3", "mmap"
}

func (h holder) String() string { return fmt.Sprintf("pid %d (%s, %s)", h.pid, h.comm, h.how) }

// findHolders lists the processes under proc (a /proc directory) that use
// a file of the filesystem whose files have device number dev: by their
// current or root directory, an open file, or a mapped file. Only the
// processes of the mount namespace mntNS (the target of a /proc/PID/ns/mnt
// link; "" for any) are looked at, and never the pid self. Processes that
// vanish during the search are skipped.
func findHolders(proc string, dev devNum, mntNS string, self int) ([]holder, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var out []holder
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		if mntNS != "" {
			if ns, err := os.Readlink(filepath.Join(dir, "ns", "mnt")); err != nil || ns != mntNS {
				continue
			}
		}
		if how := usesDev(dir, dev); how != "" {
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			out = append(out, holder{pid: pid, comm: strings.TrimSpace(string(comm)), how: how})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out, nil
}

// usesDev says how the process of /proc/PID dir uses dev, "" when it does not.
func usesDev(dir string, dev devNum) string {
	on := func(path string) bool {
		var st syscall.Stat_t
		return syscall.Stat(path, &st) == nil && devOf(uint64(st.Dev)) == dev
	}
	if on(filepath.Join(dir, "cwd")) {
		return "cwd"
	}
	if on(filepath.Join(dir, "root")) {
		return "root"
	}
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	for _, fd := range fds {
		if on(filepath.Join(dir, "fd", fd.Name())) {
			return "fd " + fd.Name()
		}
	}
	if maps, err := os.ReadFile(filepath.Join(dir, "maps")); err == nil {
		for _, d := range parseMapsDevs(maps) {
			if d == dev {
				return "mmap"
			}
		}
	}
	return ""
}

// describeHolders renders holders for an error or a log line.
func describeHolders(hs []holder) string {
	if len(hs) == 0 {
		return "no process found"
	}
	parts := make([]string, 0, len(hs))
	for i, h := range hs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(hs)-10))
			break
		}
		parts = append(parts, h.String())
	}
	return strings.Join(parts, ", ")
}

// loopDevsOf returns the device numbers of the loop devices whose backing
// file is the file of st (same st_dev and inode), asked to each attached
// loop device (LOOP_GET_STATUS64); a loop device that cannot be opened is
// compared by the path in /sys/block/loopN/loop/backing_file instead.
func loopDevsOf(path string, st *syscall.Stat_t) []devNum {
	dirs, _ := filepath.Glob("/sys/block/loop*/loop")
	var out []devNum
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		raw, err := os.ReadFile(filepath.Join("/sys/block", name, "dev"))
		if err != nil {
			continue
		}
		maj, min, _ := strings.Cut(strings.TrimSpace(string(raw)), ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		num := devNum{uint32(ma), uint32(mi)}
		if f, err := os.Open("/dev/" + name); err == nil {
			info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
			f.Close()
			if err == nil {
				if info.Device == uint64(st.Dev) && info.Inode == uint64(st.Ino) {
					out = append(out, num)
				}
				continue
			}
			if errors.Is(err, unix.ENXIO) {
				continue // detached since the glob
			}
		}
		b, err := os.ReadFile(filepath.Join(d, "backing_file"))
		if err == nil && strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)") == path {
			out = append(out, num)
		}
	}
	return out
}
