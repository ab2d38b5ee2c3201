package resource

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// The fs driver on a real ext4 filesystem in a loop device (root only).

// skipUnlessLoopExt4 skips the test unless it runs as root with losetup,
// mkfs.ext4, mount and a free loop device.
func skipUnlessLoopExt4(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("not root: the fs tests mount a loop device (run them as root)")
	}
	for _, c := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not found (packages util-linux, mount, e2fsprogs): %v", c, err)
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("no loop devices here: %v", err)
	}
}

// ext4Image makes a 16 MiB ext4 image file in a temp dir.
func ext4Image(t *testing.T) string {
	t.Helper()
	skipUnlessLoopExt4(t)
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	return img
}

// loopExt4 attaches a new ext4 image to a free loop device, returned; at
// the end of the test every mount of it is lazily unmounted and it is
// detached.
func loopExt4(t *testing.T) string {
	t.Helper()
	img := ext4Image(t)
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("no free loop device: losetup -f: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		umountAll(dev)
		_ = exec.Command("losetup", "-d", dev).Run()
	})
	return dev
}

// umountAll lazily unmounts every mount of the source src.
func umountAll(src string) {
	entries, _ := readMountinfo()
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].source == src {
			_ = exec.Command("umount", "-l", entries[i].mountPoint).Run()
		}
	}
}

func fsConfig(dev, mnt string) config.ResourceConfig {
	return config.ResourceConfig{RID: "fs#data", Type: "fs", Name: "data", Dev: dev, Mnt: mnt, FSType: "ext4", Timeout: 20 * time.Second}
}

func newFSDriver(t *testing.T, rc config.ResourceConfig) (*fsMount, *logRec) {
	t.Helper()
	env, rec := testEnv(t)
	d, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	fs := d.(*fsMount)
	fs.grace, fs.killWait = time.Second, 2*time.Second
	return fs, rec
}

func wantStatus(t *testing.T, d Driver, want dataset.Status, reason string) {
	t.Helper()
	got, why := d.Status(context.Background())
	if got != want || !strings.Contains(why, reason) {
		t.Fatalf("status %s (%q), want %s (%q)", got, why, want, reason)
	}
}

// mountedOn lists where src is mounted, from the mount table.
func mountedOn(t *testing.T, src string) []string {
	t.Helper()
	entries, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.source == src {
			out = append(out, e.mountPoint)
		}
	}
	return out
}

// Start creates the missing mount point and mounts (mnt_opt given to
// mount), a second start changes nothing, stop unmounts, a second stop
// succeeds; the status follows. The device is given through a symlink and
// found in the mount table under its real name.
func TestFSMountStatusUnmount(t *testing.T) {
	dev := loopExt4(t)
	link := filepath.Join(t.TempDir(), "by-id-disk")
	if err := os.Symlink(dev, link); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(t.TempDir(), "srv", "my data") // missing, with a blank
	rc := fsConfig(link, mnt)
	rc.MntOpt = "noatime,nodev"
	d, rec := newFSDriver(t, rc)
	ctx := context.Background()

	wantStatus(t, d, dataset.StatusDown, "")
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mountedOn(t, dev); len(got) != 1 || got[0] != mnt {
		t.Fatalf("%s mounted on %v, want %s", dev, got, mnt)
	}
	wantStatus(t, d, dataset.StatusUp, "")
	if !rec.has("create the mount point "+mnt) || !rec.has("mount -t ext4 -o noatime,nodev "+link+" "+mnt) {
		t.Errorf("log:\n%s", rec)
	}
	if out, _ := os.ReadFile("/proc/self/mountinfo"); !strings.Contains(string(out), "noatime") {
		t.Errorf("mnt_opt noatime not in the mount table")
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if !rec.has(link + " is already mounted on " + mnt) {
		t.Errorf("second start did not say it was already mounted:\n%s", rec)
	}
	if got := mountedOn(t, dev); len(got) != 1 {
		t.Fatalf("after a second start %s is mounted on %v, want once", dev, got)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mountedOn(t, dev); len(got) != 0 {
		t.Fatalf("after stop %s is still mounted on %v", dev, got)
	}
	wantStatus(t, d, dataset.StatusDown, "")
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop of an unmounted fs: %v", err)
	}
}

// A mount point given through a symlink is found in the mount table under
// its real path; a directory as dev (a bind mount) is refused.
func TestFSMountPointSymlinkAndBind(t *testing.T) {
	dev := loopExt4(t)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	d, _ := newFSDriver(t, fsConfig(dev, link))
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mountedOn(t, dev); len(got) != 1 || got[0] != real {
		t.Fatalf("%s mounted on %v, want %s", dev, got, real)
	}
	wantStatus(t, d, dataset.StatusUp, "")
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, d, dataset.StatusDown, "")

	bind, _ := newFSDriver(t, fsConfig(t.TempDir(), filepath.Join(t.TempDir(), "b")))
	if err := bind.Start(ctx); err == nil || !strings.Contains(err.Error(), "is a directory: bind mounts are not supported") {
		t.Fatalf("start with a directory as dev: %v", err)
	}
}

// A device already mounted elsewhere is never mounted a second time: the
// start refuses, naming the other mount point, and the status says where
// it is. A mount point holding another filesystem is refused too, and
// its stop leaves that filesystem alone.
func TestFSRefusals(t *testing.T) {
	dev := loopExt4(t)
	other := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ext4", dev, other).CombinedOutput(); err != nil {
		t.Fatalf("mount %s %s: %v: %s", dev, other, err, out)
	}
	mnt := t.TempDir()
	d, _ := newFSDriver(t, fsConfig(dev, mnt))
	ctx := context.Background()
	wantStatus(t, d, dataset.StatusDown, dev+" is mounted on "+other+", not on "+mnt)
	err := d.Start(ctx)
	want := "fs#data: " + dev + " is already mounted on " + other + ": refusing to mount it on " + mnt + " too"
	if err == nil || err.Error() != want {
		t.Fatalf("start error %v, want %s", err, want)
	}
	if got := mountedOn(t, dev); len(got) != 1 {
		t.Fatalf("%s mounted on %v, want only %s", dev, got, other)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := mountedOn(t, dev); len(got) != 1 {
		t.Fatalf("the stop unmounted the other mount: %s on %v", dev, got)
	}
	if out, err := exec.Command("umount", other).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v: %s", other, err, out)
	}

	// another filesystem on mnt
	if out, err := exec.Command("mount", "-t", "tmpfs", "haventest", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	wantStatus(t, d, dataset.StatusWarn, mnt+" holds haventest (tmpfs), not "+dev)
	err = d.Start(ctx)
	want = "fs#data: " + mnt + " already holds haventest (tmpfs): refusing to mount " + dev + " over it"
	if err == nil || err.Error() != want {
		t.Fatalf("start error %v, want %s", err, want)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if got := mountedOn(t, "haventest"); len(got) != 1 {
		t.Fatalf("the stop touched the tmpfs on %s: mounted on %v", mnt, got)
	}

	// a device that does not exist
	gone, _ := newFSDriver(t, fsConfig("/dev/haven-no-such-disk", t.TempDir()))
	wantStatus(t, gone, dataset.StatusDown, "no such file or directory")
	if err := gone.Start(ctx); err == nil || !strings.Contains(err.Error(), "stat /dev/haven-no-such-disk: no such file or directory") {
		t.Fatalf("start of a missing device: %v", err)
	}
}

// A process using the filesystem makes the unmount fail: without
// force_unmount the stop fails and names it; with it, the process gets
// SIGTERM (one that ignores it, SIGKILL after the grace) and the unmount
// succeeds.
func TestFSForceUnmountKillsHolders(t *testing.T) {
	dev := loopExt4(t)
	mnt := filepath.Join(t.TempDir(), "data")
	d, rec := newFSDriver(t, fsConfig(dev, mnt))
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// one in the filesystem (cwd), one that ignores SIGTERM with a file open
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	polite := exec.Command("sleep", "300")
	polite.Dir = mnt
	stubborn := exec.Command("sh", "-c", "trap '' TERM; exec 3<"+mnt+"/f; cd /; while :; do sleep 0.1; done")
	for _, c := range []*exec.Cmd{polite, stubborn} {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		killGroupOf(t, c.Process.Pid)
		go c.Wait()
	}
	eventually(t, 5*time.Second, "the stubborn holder has its file open", func() bool {
		hs, _ := findHolders("/proc", devOf(statRdev(t, dev)), "", os.Getpid())
		return len(hs) >= 2
	})

	err := d.Stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "is busy, held by pid") || !strings.Contains(err.Error(), "set force_unmount = true") {
		t.Fatalf("stop without force_unmount: %v, want a busy error naming the holders", err)
	}
	for _, pid := range []int{polite.Process.Pid, stubborn.Process.Pid} {
		if !strings.Contains(err.Error(), "pid "+itoa(pid)+" (") {
			t.Errorf("the error does not name pid %d: %v", pid, err)
		}
	}
	wantStatus(t, d, dataset.StatusUp, "")

	// the timeout bounds the whole stop, the grace included
	d.force, d.timeout, d.grace = true, 700*time.Millisecond, 5*time.Second
	err = d.Stop(ctx)
	// the holders are named in pid order: the stubborn shell's own sleep
	// children hold its file too, and after a wrap of the pids one of
	// them may come first
	if err == nil || !strings.Contains(err.Error(), "timed out after 700ms while "+mnt+" was still held by pid ") ||
		!strings.Contains(err.Error(), "pid "+itoa(stubborn.Process.Pid)+" (sh") {
		t.Fatalf("stop with a timeout shorter than the grace: %v", err)
	}
	wantStatus(t, d, dataset.StatusUp, "")

	d.timeout, d.grace = 20*time.Second, time.Second
	start := time.Now()
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("stop with force_unmount: %v\n%s", err, rec)
	}
	took := time.Since(start)
	if got := mountedOn(t, dev); len(got) != 0 {
		t.Fatalf("still mounted on %v", got)
	}
	eventually(t, 5*time.Second, "both holders dead", func() bool { return !alive(polite.Process.Pid) && !alive(stubborn.Process.Pid) })
	for _, l := range []string{"force_unmount: SIGTERM pid " + itoa(polite.Process.Pid) + " (sleep, cwd)", "force_unmount: SIGKILL pid " + itoa(stubborn.Process.Pid)} {
		if !rec.has(l) {
			t.Errorf("log lacks %q:\n%s", l, rec)
		}
	}
	if rec.has("SIGKILL pid " + itoa(polite.Process.Pid)) {
		t.Errorf("the process that obeyed SIGTERM was SIGKILLed too:\n%s", rec)
	}
	t.Logf("force_unmount stop with a SIGTERM-deaf holder took %s (grace %s)", took.Round(10*time.Millisecond), d.grace)
}

// An image file as dev: mount(8) attaches it to a loop device, the status
// recognises the loop device as the image, the unmount detaches it, and a
// second mount of the same image elsewhere is refused.
func TestFSImageFile(t *testing.T) {
	img := ext4Image(t)
	mnt := filepath.Join(t.TempDir(), "img")
	rc := fsConfig(img, mnt)
	d, _ := newFSDriver(t, rc)
	ctx := context.Background()
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, d, dataset.StatusUp, "")
	loops := d.ident().nums
	if len(loops) != 1 {
		t.Fatalf("the image is attached to %v, want one loop device", loops)
	}
	again := filepath.Join(t.TempDir(), "again")
	t.Cleanup(func() { _ = exec.Command("umount", "-l", again).Run() })
	d2, _ := newFSDriver(t, fsConfig(img, again))
	if err := d2.Start(ctx); err == nil || !strings.Contains(err.Error(), "is already mounted on "+mnt) {
		t.Fatalf("second mount of the image: %v, want a refusal naming %s", err, mnt)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, d, dataset.StatusDown, "")
	eventually(t, 5*time.Second, "the loop device detached", func() bool { return len(d.ident().nums) == 0 })
}

func statRdev(t *testing.T, dev string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Rdev)
}

func itoa(i int) string { return strconv.Itoa(i) }
