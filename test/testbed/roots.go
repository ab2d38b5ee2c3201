package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NewSecret returns a fresh cluster secret (64 hex digits).
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// WriteFile writes content to path with mode perm, creating the parent
// directories.
func WriteFile(path, content string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		return err
	}
	return os.Chmod(path, perm) // also when the file existed
}

// WriteNodeToml writes root/etc/node.toml.
func WriteNodeToml(root, content string) error {
	return WriteFile(filepath.Join(root, "etc", "node.toml"), content, 0o644)
}

// WriteClusterToml writes root/etc/cluster.toml readable by its owner
// only, as the daemon demands of a file holding the secret.
func WriteClusterToml(root, content string) error {
	return WriteFile(filepath.Join(root, "etc", "cluster.toml"), content, 0o600)
}

// Member is one [nodes] entry of cluster.toml.
type Member struct {
	Name string
	Addr string // host:port
	// Links, when more than one, are its heartbeat addresses, one per
	// network link (Addr is then ignored).
	Links []string
}

// ClusterToml is the cluster.toml of the cluster name: its secret and its
// members, in the order given.
func ClusterToml(name, secret string, members []Member) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[cluster]\nname = %q\nsecret = %q\n\n[nodes]\n", name, secret)
	for _, m := range members {
		if len(m.Links) > 1 {
			fmt.Fprintf(&b, "%s = [%q", m.Name, m.Links[0])
			for _, l := range m.Links[1:] {
				fmt.Fprintf(&b, ", %q", l)
			}
			b.WriteString("]\n")
			continue
		}
		fmt.Fprintf(&b, "%s = %q\n", m.Name, m.Addr)
	}
	return b.String()
}

// NodeToml is the content of a node.toml.
type NodeToml struct {
	Name string
	// Keys are more lines of [node], written as given ("ready_period = \"2s\"").
	Keys []string
	// The [hb] section, written when HBPort is set; empty strings are left
	// out (the defaults).
	HBAddr     string
	HBPort     int
	HBTimeout  string
	HBInterval string
}

func (n NodeToml) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[node]\nname = %q\n", n.Name)
	for _, k := range n.Keys {
		if k != "" {
			b.WriteString(strings.TrimSuffix(k, "\n") + "\n")
		}
	}
	if n.HBPort == 0 {
		return b.String()
	}
	b.WriteString("\n[hb]\n")
	if n.HBAddr != "" {
		fmt.Fprintf(&b, "addr = %q\n", n.HBAddr)
	}
	fmt.Fprintf(&b, "port = %d\n", n.HBPort)
	if n.HBTimeout != "" {
		fmt.Fprintf(&b, "timeout = %q\n", n.HBTimeout)
	}
	if n.HBInterval != "" {
		fmt.Fprintf(&b, "interval = %q\n", n.HBInterval)
	}
	return b.String()
}
