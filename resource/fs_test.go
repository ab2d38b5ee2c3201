package resource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

const sampleMountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
25 22 0:26 / /dev/shm rw,nosuid,nodev shared:3 master:2 - tmpfs tmpfs rw,size=1024k
40 22 7:3 / /srv/my\040data rw,noatime - ext4 /dev/loop3 rw
41 22 7:3 /sub /mnt/back\134slash\011tab rw - ext4 /dev/loop3 rw
42 22 0:50 / /srv/nfs rw - nfs4 server:/export rw,vers=4.2
`

func TestParseMountinfo(t *testing.T) {
	got, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{dev: devNum{254, 0}, root: "/", mountPoint: "/", fsType: "ext4", source: "/dev/vda"},
		{dev: devNum{0, 26}, root: "/", mountPoint: "/dev/shm", fsType: "tmpfs", source: "tmpfs"},
		{dev: devNum{7, 3}, root: "/", mountPoint: "/srv/my data", fsType: "ext4", source: "/dev/loop3"},
		{dev: devNum{7, 3}, root: "/sub", mountPoint: "/mnt/back\\slash\ttab", fsType: "ext4", source: "/dev/loop3"},
		{dev: devNum{0, 50}, root: "/", mountPoint: "/srv/nfs", fsType: "nfs4", source: "server:/export"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMountinfo =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseMountinfoErrors(t *testing.T) {
	for _, bad := range []string{
		"22 1 254:0 / / rw shared:1 ext4 /dev/vda rw\n", // no separator
		"22 1 254:0 / / rw -\n",                         // nothing after it
		"22 1 25x:0 / / rw - ext4 /dev/vda rw\n",        // bad device
		"22 1\n",
	} {
		_, err := parseMountinfo(strings.NewReader(sampleMountinfo + bad))
		if err == nil || !strings.Contains(err.Error(), "mountinfo line 6") {
			t.Errorf("%q: error %v, want one naming line 6", bad, err)
		}
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:          "/plain",
		`/a\040b`:         "/a b",
		`/a\011b\012c`:    "/a\tb\nc",
		`/back\134slash`:  `/back\slash`,
		`/trail\04`:       `/trail\04`, // too short: kept
		`/not\9999octal`:  `/not\9999octal`,
		`/high\777`:       `/high\777`, // more than a byte: kept
		`\040\040`:        "  ",
		`/end\`:           `/end\`,
		"/utf8\303\251":   "/utf8é",
		`/utf8\303\251\`:  "/utf8é\\",
		`/mixed\040\x41`:  `/mixed \x41`,
		`/zero\000inside`: "/zero\x00inside",
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEvalState(t *testing.T) {
	entries, err := parseMountinfo(strings.NewReader(sampleMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	loop3 := func(e mountEntry) bool { return e.dev == devNum{7, 3} }
	tests := []struct {
		name  string
		mnt   string
		match func(mountEntry) bool
		ours  bool
		top   string // source of the mount at mnt
		else_ []string
	}{
		{"mounted here and bound elsewhere", "/srv/my data", loop3, true, "/dev/loop3", []string{"/mnt/back\\slash\ttab"}},
		{"mounted elsewhere only", "/srv/other", loop3, false, "", []string{"/srv/my data", "/mnt/back\\slash\ttab"}},
		{"another device here", "/srv/nfs", loop3, false, "server:/export", []string{"/srv/my data", "/mnt/back\\slash\ttab"}},
		{"not mounted", "/srv/x", func(mountEntry) bool { return false }, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := evalState(entries, tt.mnt, tt.match)
			top := ""
			if st.top != nil {
				top = st.top.source
			}
			if st.ours != tt.ours || top != tt.top || !reflect.DeepEqual(st.elsewhere, tt.else_) {
				t.Errorf("evalState = ours %v top %q elsewhere %q; want %v %q %q", st.ours, top, st.elsewhere, tt.ours, tt.top, tt.else_)
			}
		})
	}
	// the last mount on a mount point is the visible one
	stacked := append(append([]mountEntry(nil), entries...), mountEntry{dev: devNum{0, 99}, mountPoint: "/srv/my data", fsType: "tmpfs", source: "tmpfs"})
	if st := evalState(stacked, "/srv/my data", loop3); st.ours || st.top.source != "tmpfs" {
		t.Errorf("a tmpfs mounted over the device: ours %v top %+v, want not ours, top tmpfs", st.ours, st.top)
	}
}

func TestParseMapsDevs(t *testing.T) {
	maps := `55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 1835023                    /usr/bin/sleep
7f1c2e600000-7f1c2e628000 r--p 00000000 fe:00 1836380                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2e800000-7f1c2e801000 rw-p 00000000 00:00 0                          [heap]
7f1c2e900000-7f1c2e901000 rw-s 00000000 07:0a 12                         /srv/my data/shm file
7ffd6d1e4000-7ffd6d205000 rw-p 00000000 00:00 0                          [stack]
garbage line
7f-80 r--p 00000000 zz:00 5 /bad
`
	got := parseMapsDevs([]byte(maps))
	want := []devNum{{0xfe, 0}, {7, 10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseMapsDevs = %v, want %v", got, want)
	}
}

// findHolders over a made-up /proc whose links point at real files: the
// processes are found by their cwd, their root, an open file or a mapped
// file of the device, only in the given mount namespace, never self.
func TestFindHolders(t *testing.T) {
	proc := t.TempDir()
	target := t.TempDir() // a directory of the device looked for
	other := "/proc"      // another device (procfs)
	if err := os.WriteFile(filepath.Join(target, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(target, &st); err != nil {
		t.Fatal(err)
	}
	dev := devOf(uint64(st.Dev))
	var ost syscall.Stat_t
	if err := syscall.Stat(other, &ost); err != nil || devOf(uint64(ost.Dev)) == dev {
		t.Skipf("%s is not on another device than %s", other, target)
	}
	mapLine := fmt.Sprintf("7f00-7f01 r--p 00000000 %02x:%02x 12 %s/file\n", dev.major, dev.minor, target)
	type pspec struct {
		pid           string
		cwd, root, ns string
		fds           map[string]string
		maps, comm    string
		wantHow       string
	}
	specs := []pspec{
		{pid: "100", cwd: target, root: other, ns: "mnt:[1]", comm: "incwd", wantHow: "cwd"},
		{pid: "101", cwd: other, root: target, ns: "mnt:[1]", comm: "chrooted", wantHow: "root"},
		{pid: "102", cwd: other, root: other, ns: "mnt:[1]", comm: "openfile", fds: map[string]string{"0": "/dev/null", "3": target + "/file"}, wantHow: "fd 3"},
		{pid: "103", cwd: other, root: other, ns: "mnt:[1]", comm: "mapper", maps: mapLine, wantHow: "mmap"},
		{pid: "104", cwd: other, root: other, ns: "mnt:[1]", comm: "bystander"},
		{pid: "105", cwd: target, root: other, ns: "mnt:[2]", comm: "otherns"},
		{pid: "999", cwd: target, root: other, ns: "mnt:[1]", comm: "self"},
		{pid: "106", cwd: target + "/gone", root: other, ns: "mnt:[1]", comm: "vanished"},
	}
	for _, p := range specs {
		d := filepath.Join(proc, p.pid)
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(d, "fd"), 0o755))
		must(os.MkdirAll(filepath.Join(d, "ns"), 0o755))
		must(os.Symlink(p.cwd, filepath.Join(d, "cwd")))
		must(os.Symlink(p.root, filepath.Join(d, "root")))
		must(os.Symlink(p.ns, filepath.Join(d, "ns", "mnt")))
		for fd, to := range p.fds {
			must(os.Symlink(to, filepath.Join(d, "fd", fd)))
		}
		must(os.WriteFile(filepath.Join(d, "maps"), []byte(p.maps), 0o644))
		must(os.WriteFile(filepath.Join(d, "comm"), []byte(p.comm+"\n"), 0o644))
	}
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := findHolders(proc, dev, "mnt:[1]", 999)
	if err != nil {
		t.Fatal(err)
	}
	want := []holder{{100, "incwd", "cwd"}, {101, "chrooted", "root"}, {102, "openfile", "fd 3"}, {103, "mapper", "mmap"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findHolders =\n%v\nwant\n%v", got, want)
	}
	if s := describeHolders(got); s != "pid 100 (incwd, cwd), pid 101 (chrooted, root), pid 102 (openfile, fd 3), pid 103 (mapper, mmap)" {
		t.Errorf("describeHolders = %s", s)
	}
	// any namespace: the other one too
	all, _ := findHolders(proc, dev, "", 999)
	if len(all) != 5 || all[4].pid != 105 {
		t.Errorf("findHolders without a namespace = %v, want 100-103 and 105", all)
	}
}

func TestNewFSRefusesBadConfig(t *testing.T) {
	ok := config.ResourceConfig{RID: "fs#d", Type: "fs", Dev: "/dev/sdb1", Mnt: "/srv/d", FSType: "ext4"}
	for _, tt := range []struct {
		name string
		edit func(*config.ResourceConfig)
		want string
	}{
		{"no dev", func(r *config.ResourceConfig) { r.Dev = "" }, "fs#d: dev is required"},
		{"no type", func(r *config.ResourceConfig) { r.FSType = "" }, "fs#d: type is required"},
		{"relative mnt", func(r *config.ResourceConfig) { r.Mnt = "srv" }, `fs#d: mnt "srv" is not an absolute path other than /`},
		{"root mnt", func(r *config.ResourceConfig) { r.Mnt = "/" }, `fs#d: mnt "/" is not an absolute path other than /`},
	} {
		rc := ok
		tt.edit(&rc)
		if _, err := New(rc, Env{}); err == nil || err.Error() != tt.want {
			t.Errorf("%s: New error = %v, want %s", tt.name, err, tt.want)
		}
	}
	d, err := New(ok, Env{})
	if err != nil || d.Label() != "/dev/sdb1@/srv/d" {
		t.Fatalf("New = %v, %v; want label /dev/sdb1@/srv/d", d, err)
	}
}

// A reading of the mount state that blocks (a stat of a hung NFS mount
// point) is given up at the resource's timeout: the status is warn and
// says so; while it stays blocked no second reading starts; once it
// returns the status reads normally again.
func TestFSStatusGivesUpABlockedReading(t *testing.T) {
	rc := config.ResourceConfig{RID: "fs#d", Type: "fs", Dev: "srv:/export", Mnt: "/srv/d", FSType: "nfs", Timeout: 50 * time.Millisecond}
	d, err := New(rc, Env{})
	if err != nil {
		t.Fatal(err)
	}
	p := d.(*fsMount)
	release := make(chan struct{})
	var calls atomic.Int32
	p.read = func() (fsState, devIdent, error) {
		calls.Add(1)
		<-release
		return fsState{ours: true}, devIdent{}, nil
	}
	ctx := context.Background()
	st, why := p.Status(ctx)
	if st != dataset.StatusWarn || why != "reading the mount state of srv:/export and /srv/d: timed out after 50ms (a hung filesystem?)" {
		t.Fatalf("blocked reading: status %s %q", st, why)
	}
	st, why = p.Status(ctx)
	if st != dataset.StatusWarn || why != errProbeStuck.Error() || calls.Load() != 1 {
		t.Fatalf("while blocked: status %s %q after %d readings, want warn %q after 1", st, why, calls.Load(), errProbeStuck)
	}
	if err := p.Start(ctx); err == nil || !strings.Contains(err.Error(), "still blocked") {
		t.Fatalf("start while blocked: %v", err)
	}
	close(release)
	eventually(t, 5*time.Second, "the status reads again once the reading returned", func() bool {
		st, _ := p.Status(ctx)
		return st == dataset.StatusUp
	})
}
