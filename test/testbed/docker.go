package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Docker is one node's own dockerd for the tests: its own data root,
// run directory and socket (its DOCKER_HOST), the daemon started by the
// test and stopped by Close, so that several nodes on one host never see
// each other's containers. The configuration suits the CI machines: the
// cgroupfs cgroup driver (a --cgroup-parent is a path, not a systemd
// slice), the vfs storage driver (any file system; the test image is a
// few MB), no bridge, no iptables (host networking only; NewDockerBridge
// has them, in a network namespace of the test's own), and an empty
// daemon.json (the host's /etc/docker is not read).
type Docker struct {
	Dir string
	run string // the short run directory: the sockets' paths stay under 108 bytes
	// Env is what the engine's calls need: DOCKER_HOST (give it to a node
	// as container_env).
	Env    []string
	cmd    *exec.Cmd
	exited chan struct{} // closed once dockerd is reaped
	log    string
}

// DockerUnavailable says why the docker tests cannot run here ("" when
// they may try): not root, or dockerd, docker, containerd, runc or
// busybox-static not installed. A dockerd that does not start is
// NewDocker's error.
func DockerUnavailable() string {
	if os.Geteuid() != 0 {
		return "docker: run as root"
	}
	for _, p := range []string{"dockerd", "docker", "containerd", "runc"} {
		if _, err := exec.LookPath(p); err != nil {
			return p + " is not installed (Debian: apt-get install docker.io busybox-static)"
		}
	}
	if _, err := busybox(); err != nil {
		return err.Error()
	}
	return ""
}

// NewDocker starts a dockerd of its own with its data under dir, and
// returns once it answers (within a minute).
func NewDocker(dir string) (*Docker, error) { return NewDockerDriver(dir, "cgroupfs") }

// NewDockerDriver is NewDocker with the cgroup driver (cgroupfs, systemd).
func NewDockerDriver(dir, driver string) (*Docker, error) { return newDocker(dir, driver, false) }

// NewDockerBridge is NewDocker with dockerd's default bridge (docker0,
// 172.17.0.0/16) and its iptables rules (network = "bridge"): they are
// made in the caller's network namespace, which must be the test's own
// (a node's), never the host's.
func NewDockerBridge(dir string) (*Docker, error) { return newDocker(dir, "cgroupfs", true) }

func newDocker(dir, driver string, bridge bool) (*Docker, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	run, err := os.MkdirTemp("", "hvd")
	if err != nil {
		return nil, err
	}
	d := &Docker{Dir: dir, run: run, log: filepath.Join(dir, "dockerd.log")}
	sock := filepath.Join(run, "docker.sock")
	d.Env = []string{"DOCKER_HOST=unix://" + sock}
	conf := filepath.Join(run, "daemon.json")
	if err := WriteFile(conf, "{}\n", 0o600); err != nil {
		return nil, err
	}
	lf, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	ns := "haven-" + filepath.Base(run)
	d.cmd = exec.Command("dockerd", "--config-file", conf,
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(run, "exec"),
		"--pidfile", filepath.Join(run, "dockerd.pid"), "--host", "unix://"+sock,
		"--containerd-namespace", ns, "--containerd-plugins-namespace", ns+"-plugins",
		"--storage-driver", "vfs", "--exec-opt", "native.cgroupdriver="+driver,
		"--ip6tables=false", "--userland-proxy=false")
	if !bridge {
		d.cmd.Args = append(d.cmd.Args, "--bridge", "none", "--iptables=false", "--ip-masq=false")
	}
	d.cmd.Stdout, d.cmd.Stderr = lf, lf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(run)
		return nil, err
	}
	d.exited = make(chan struct{})
	go func() { d.cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := d.Run("version", "--format", "{{.Server.Version}}"); err == nil {
			return d, nil
		}
		select {
		case <-d.exited:
			d.cleanup()
			return nil, fmt.Errorf("dockerd exited at its start: %s", d.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Close()
			return nil, fmt.Errorf("dockerd did not answer within a minute: %s", d.logTail())
		}
	}
}

// Pid is dockerd's process id.
func (d *Docker) Pid() int { return d.cmd.Process.Pid }

// logTail is the last lines of dockerd's log.
func (d *Docker) logTail() string {
	b, _ := os.ReadFile(d.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// Run runs docker on this dockerd (bounded at 60 s) and returns its
// standard output.
func (d *Docker) Run(args ...string) (string, error) { return runEngine("docker", d.Env, args...) }

// Running lists the names of the daemon's running containers: the
// observer outside the cluster. A container runs when docker says so and
// its process is there, in the cgroup named after the container's id
// (as Podman.Running).
func (d *Docker) Running() ([]string, error) {
	ids, err := d.Run("ps", "--quiet", "--no-trunc")
	if err != nil || strings.TrimSpace(ids) == "" {
		return nil, err
	}
	out, err := d.Run(append([]string{"container", "inspect", "--format", "{{.Id}} {{.State.Pid}} {{.Name}}", "--"}, strings.Fields(ids)...)...)
	if err != nil && !strings.Contains(err.Error(), "No such") {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] == "0" {
			continue
		}
		if b, err := os.ReadFile("/proc/" + f[1] + "/cgroup"); err == nil && bytes.Contains(b, []byte(f[0])) {
			names = append(names, strings.TrimPrefix(f[2], "/"))
		}
	}
	return names, nil
}

// ImportBusybox imports an image of the static busybox alone as ref
// (docker import: no registry).
func (d *Docker) ImportBusybox(ref string) error {
	tarball := filepath.Join(d.Dir, "rootfs.tar")
	if err := BusyboxTar(tarball); err != nil {
		return err
	}
	_, err := d.Run("import", tarball, ref)
	return err
}

// Close removes every container, stops dockerd (SIGTERM: it stops its
// containerd; SIGKILL of its process group after 20 s) and removes its
// directories.
func (d *Docker) Close() {
	if ids, err := d.Run("ps", "--all", "--quiet", "--no-trunc"); err == nil && strings.TrimSpace(ids) != "" {
		d.Run(append([]string{"rm", "--force", "--"}, strings.Fields(ids)...)...)
	}
	if d.cmd != nil && d.cmd.Process != nil {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(20 * time.Second):
		}
		// its containerd and shims, if they outlived it
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
	}
	d.cleanup()
}

func (d *Docker) cleanup() {
	// what dockerd left mounted (its exec root's netns/default)
	unmountUnder(d.run)
	unmountUnder(d.Dir)
	if err := os.RemoveAll(d.run); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "testbed: docker run directory %s: %v\n", d.run, err)
	}
	os.RemoveAll(d.Dir)
}

// unmountUnder detaches every mount under dir, the deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mp := strings.ReplaceAll(f[4], "\\040", " ")
		if strings.HasPrefix(mp, dir+"/") {
			mps = append(mps, mp)
		}
	}
	for i := len(mps) - 1; i >= 0; i-- {
		syscall.Unmount(mps[i], syscall.MNT_DETACH)
	}
}

// Store is one node's container engine as the tests drive it: a
// Podman store or a Docker daemon of its own.
type Store interface {
	Run(args ...string) (string, error)
	Running() ([]string, error)
	ImportBusybox(ref string) error
	// Environ is what the engine's calls need (a node's container_env).
	Environ() []string
	Close()
}

// Environ is the variables of the store's calls.
func (p *Podman) Environ() []string { return p.Env }

// Environ is the variables of the daemon's calls.
func (d *Docker) Environ() []string { return d.Env }

// EngineUnavailable is PodmanUnavailable or DockerUnavailable.
func EngineUnavailable(engine string) string {
	if engine == "docker" {
		return DockerUnavailable()
	}
	return PodmanUnavailable()
}

// NewStore is NewPodman or NewDocker of dir. A dockerd that cannot
// start here is an error that says so (the caller skips on it).
func NewStore(engine, dir string) (Store, error) {
	if engine == "docker" {
		d, err := NewDocker(dir)
		if err != nil {
			return nil, &NoDockerd{err}
		}
		return d, nil
	}
	return NewPodman(dir)
}

// NewBridgeStore is NewStore for network = "bridge": with docker, a
// dockerd with its bridge and iptables rules (NewDockerBridge), to be
// called in a network namespace of the test's own.
func NewBridgeStore(engine, dir string) (Store, error) {
	if engine == "docker" {
		d, err := NewDockerBridge(dir)
		if err != nil {
			return nil, &NoDockerd{err}
		}
		return d, nil
	}
	return NewPodman(dir)
}

// NoDockerd is a dockerd that did not start: the docker tests skip.
type NoDockerd struct{ Err error }

func (e *NoDockerd) Error() string { return "docker: no dockerd of the test's own: " + e.Err.Error() }
