package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Registry is an image registry of a test's own on loopback: Debian's
// docker-registry (the distribution registry), plain HTTP, its storage in
// a directory of the test's. No registry outside is reachable: the tests
// of pulls push their images here first (Push), and each node's store
// trusts it (TrustRegistry).
type Registry struct {
	Addr string // 127.0.0.1:PORT
	dir  string
	cmd  *exec.Cmd
}

// RegistryUnavailable says why a Registry cannot run here ("" when it can).
func RegistryUnavailable() string {
	if _, err := exec.LookPath("docker-registry"); err != nil {
		return "docker-registry is not installed (Debian: apt-get install docker-registry)"
	}
	return ""
}

// StartRegistry runs a registry on a free loopback port with its storage
// under dir, and waits until it answers (at most 10 s).
func StartRegistry(dir string) (*Registry, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	r := &Registry{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	conf := fmt.Sprintf("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), r.Addr)
	if err := WriteFile(filepath.Join(dir, "registry.yml"), conf, 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	r.cmd = exec.Command("docker-registry", "serve", filepath.Join(dir, "registry.yml"))
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	err = WaitFor(10*time.Second, 50*time.Millisecond, "the registry answers on "+r.Addr, func() bool {
		c, err := net.DialTimeout("tcp", r.Addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if err != nil {
		r.Close()
		b, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
		return nil, fmt.Errorf("%v: %s", err, b)
	}
	return r, nil
}

// Close stops the registry.
func (r *Registry) Close() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// Push pushes image ref of store p to the registry as name (REPO:TAG):
// it is then pullable as Addr/name.
func (r *Registry) Push(p *Podman, ref, name string) error {
	_, err := p.Run("push", "--quiet", "--tls-verify=false", ref, r.Addr+"/"+name)
	return err
}

// TrustRegistry lets store p pull from the plain-HTTP registry at addr
// (an insecure registry of its registries.conf).
func (p *Podman) TrustRegistry(addr string) error {
	f, err := os.OpenFile(filepath.Join(p.Dir, "registries.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "\n[[registry]]\nlocation = %q\ninsecure = true\n", addr)
	return errors.Join(err, f.Close())
}
