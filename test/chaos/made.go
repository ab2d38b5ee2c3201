package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// What a bed makes outside its own process (network namespaces, and the
// processes in them; tmpfs mounts) outlives that process when it ends
// without its cleanup: a panic in a goroutine, a fatal runtime error,
// kill -9. RecordMadeTo keeps a record of each as it is made, in a file;
// the `chaos` command runs the round in a child process that records, and
// removes with RemoveMade whatever is left once the child ended, however
// it ended.

var made struct {
	mu sync.Mutex
	f  *os.File
}

// madeEntry is one line of the record.
type madeEntry struct {
	Netns string `json:"netns,omitempty"`
	Mount string `json:"mount,omitempty"`
}

// RecordMadeTo appends, from now on, every namespace and mount this
// process makes to the file at path (created 0600 when missing).
func RecordMadeTo(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	made.mu.Lock()
	defer made.mu.Unlock()
	if made.f != nil {
		made.f.Close()
	}
	made.f = f
	return nil
}

// recordMade writes e to the record, if one is kept, before the thing is
// made: a crash between the two leaves an entry for something that does
// not exist, which RemoveMade skips.
func recordMade(e madeEntry) {
	made.mu.Lock()
	defer made.mu.Unlock()
	if made.f == nil {
		return
	}
	b, _ := json.Marshal(e)
	made.f.Write(append(b, '\n'))
	made.f.Sync()
}

// RemoveMade removes what the record at path lists and is still there:
// it kills the processes of each namespace, unmounts each mount (lazily
// when busy), then deletes the namespaces. It returns what it removed and
// what it could not.
func RemoveMade(path string) (removed []string, errs []error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []error{err}
	}
	defer f.Close()
	var nss, mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e madeEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line cut by the crash
		}
		if e.Netns != "" && !slices.Contains(nss, e.Netns) {
			nss = append(nss, e.Netns)
		}
		if e.Mount != "" && !slices.Contains(mounts, e.Mount) {
			mounts = append(mounts, e.Mount)
		}
	}
	nss = slices.DeleteFunc(nss, func(ns string) bool { _, err := os.Stat("/var/run/netns/" + ns); return err != nil })
	// the processes first: daemons hold files on the mounts
	for _, ns := range nss {
		for _, pid := range nsPids(ns) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	mounted := mountPoints()
	for _, m := range slices.Backward(mounts) {
		if !mounted[m] {
			continue
		}
		if out, err := exec.Command("umount", m).CombinedOutput(); err != nil {
			if out2, err2 := exec.Command("umount", "-l", m).CombinedOutput(); err2 != nil {
				errs = append(errs, fmt.Errorf("umount %s: %v: %s; umount -l: %v: %s", m, err, out, err2, out2))
				continue
			}
		}
		removed = append(removed, "mount "+m)
	}
	for _, ns := range nss {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", ns, err, out))
			continue
		}
		removed = append(removed, "netns "+ns)
	}
	return removed, errs
}

// mountPoints are the mount points of this mount namespace.
func mountPoints() map[string]bool {
	out := map[string]bool{}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out[unescapeMount(f[4])] = true
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &c); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
