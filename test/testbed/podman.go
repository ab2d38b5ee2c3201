package testbed

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Podman is one node's own podman storage for the tests: its own image
// and container store, run directory and temporary directory, so that
// several nodes on one host never see each other's containers. The
// configuration suits the CI machines: the runc runtime (crun refuses a
// hybrid cgroup layout), no default ulimits (podman's default
// RLIMIT_NOFILE is above some hosts' hard limit), the cgroupfs cgroup
// manager (a --cgroup-parent is a path, not a systemd slice), and a
// network configuration directory of its own (network = "bridge": the
// default network is netavark's, made in the network namespace podman
// runs in; its address allocations are the host's, in
// /run/containers/networks, shared by every store).
type Podman struct {
	Dir string
	// Env is what the engine's calls need: CONTAINERS_STORAGE_CONF and
	// CONTAINERS_CONF (give it to a node as container_env).
	Env []string
	// NetNS, when set, is the network namespace (in /run/netns) of the
	// node the store is given to: its calls enter that namespace alone
	// (nsenter --net, keeping the host's cgroup mounts), so that the
	// engine's network set-up and tear-down (netavark's bridge and NAT
	// rules, network = "bridge") act there, as the node's daemon's do.
	NetNS string
}

// PodmanUnavailable says why the podman tests cannot run here ("" when
// they can): not root, or podman or runc not installed.
func PodmanUnavailable() string {
	if os.Geteuid() != 0 {
		return "podman: run as root"
	}
	for _, p := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(p); err != nil {
			return p + " is not installed (Debian: apt-get install podman runc busybox-static)"
		}
	}
	if _, err := busybox(); err != nil {
		return err.Error()
	}
	return ""
}

// NewPodman writes the configuration of a store under dir.
func NewPodman(dir string) (*Podman, error) {
	for _, d := range []string{"graph", "run", "tmp", "networks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run"))
	conf := fmt.Sprintf("[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nevents_logfile_path = %q\ntmp_dir = %q\n\n[network]\nnetwork_config_dir = %q\n",
		filepath.Join(dir, "events.log"), filepath.Join(dir, "tmp"), filepath.Join(dir, "networks"))
	if err := WriteFile(filepath.Join(dir, "storage.conf"), storage, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(filepath.Join(dir, "containers.conf"), conf, 0o600); err != nil {
		return nil, err
	}
	// no registry to search short names in (none is reachable); a test's
	// own registry is added by TrustRegistry
	if err := WriteFile(filepath.Join(dir, "registries.conf"), "unqualified-search-registries = []\n", 0o600); err != nil {
		return nil, err
	}
	return &Podman{Dir: dir, Env: []string{
		"CONTAINERS_STORAGE_CONF=" + filepath.Join(dir, "storage.conf"),
		"CONTAINERS_CONF=" + filepath.Join(dir, "containers.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + filepath.Join(dir, "registries.conf"),
	}}, nil
}

// Run runs podman on this store (bounded at 60 s) and returns its
// standard output.
func (p *Podman) Run(args ...string) (string, error) {
	if p.NetNS != "" {
		return runEngine("nsenter", p.Env, append([]string{"--net=/run/netns/" + p.NetNS, "--", "podman"}, args...)...)
	}
	return runEngine("podman", p.Env, args...)
}

// runEngine runs an engine's command line (podman, docker) with env over
// this process's environment, bounded at 60 s, and returns its standard
// output; an error names the call and carries its standard error.
func runEngine(bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Running lists the names of the store's running containers: the
// observer outside the cluster. Podman's records alone are not enough
// (they say running after the container's monitor, conmon, was killed
// with it, and --sync does not correct that): a container runs when its
// process is there, in the cgroup named after the container's id.
func (p *Podman) Running() ([]string, error) {
	out, err := p.Run("ps", "--no-trunc", "--format", "{{.ID}} {{.Pid}} {{.Names}}")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		if b, err := os.ReadFile("/proc/" + f[1] + "/cgroup"); err == nil && strings.Contains(string(b), f[0]) {
			names = append(names, f[2])
		}
	}
	return names, nil
}

// Close removes every container of the store, then the store. A
// container whose monitor was killed with it (the node guard) fails its
// first removal and is taken as stopped by it: a second one removes it.
func (p *Podman) Close() {
	p.Run("stop", "--all", "--time", "0")
	if _, err := p.Run("rm", "--all", "--force", "--time", "0"); err != nil {
		p.Run("rm", "--all", "--force", "--time", "0")
	}
	os.RemoveAll(p.Dir)
}

// busybox is Debian's busybox-static program: a busybox without a
// program interpreter (it runs in an empty root filesystem).
func busybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, pr := range f.Progs {
			static = static && pr.Type != elf.PT_INTERP
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	return "", errors.New("busybox-static is not installed (Debian: apt-get install busybox-static)")
}

// ImportBusybox builds an image offline, a root filesystem of the
// static busybox alone (its applets as links: sh, sleep, ...), and
// imports it as ref (podman import: no registry).
func (p *Podman) ImportBusybox(ref string) error {
	tarball := filepath.Join(p.Dir, "rootfs.tar")
	if err := BusyboxTar(tarball); err != nil {
		return err
	}
	_, err := p.Run("import", "--quiet", tarball, ref)
	return err
}

// BusyboxRootfs makes a root filesystem of the static busybox in dir (a
// container's rootfs directory).
func BusyboxRootfs(dir string) error {
	bb, err := busybox()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), b, 0o755); err != nil {
		return err
	}
	for _, a := range busyboxApplets {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", a)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	for _, d := range []string{"tmp", "proc", "sys", "dev", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

var busyboxApplets = []string{"sh", "sleep", "echo", "cat", "env", "ls", "true", "false", "kill", "ps", "httpd", "wget"}

// BusyboxTar writes a tarball of a busybox root filesystem.
func BusyboxTar(path string) error {
	bb, err := busybox()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	now := time.Now()
	for _, d := range []string{"bin/", "tmp/", "proc/", "sys/", "dev/", "etc/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(b)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(b); err != nil {
		return err
	}
	for _, a := range busyboxApplets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
