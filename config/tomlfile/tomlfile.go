// Package tomlfile is the shell's side of package config: it decodes TOML
// (BurntSushi/toml), reads node.toml, cluster.toml and services/NAME.toml,
// supplies the host name default and checks the node's own address against
// the host's interfaces. Parsing, validation and edits stay in config, over
// the decoded tree, so that the pure core, which uses config's types,
// reaches no TOML parser, file or socket (monitor's TestCorePackagesArePure).
//
// The functions here are config's Decoder methods bound to Decode.
package tomlfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"haven/config"
)

// Decode decodes TOML text for config; a syntax error is a
// *config.SyntaxError.
var Decode config.Decoder = decode

func decode(text string) (config.Tree, error) {
	var t config.Tree
	md, err := toml.Decode(text, &t.Values)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return config.Tree{}, &config.SyntaxError{Line: pe.Position.Line, LastKey: pe.LastKey, Msg: pe.Message, Err: err}
		}
		return config.Tree{}, err
	}
	for _, k := range md.Keys() {
		t.Keys = append(t.Keys, []string(k))
	}
	return t, nil
}

// ParseService parses and validates a service config. file only names the
// source in errors; name is the service name.
func ParseService(file, name string, data []byte) (*config.ServiceConfig, error) {
	return Decode.ParseService(file, name, data)
}

// ParseNode parses the content of node.toml; the node name defaults to
// the short host name.
func ParseNode(file string, data []byte) (*config.NodeConfig, error) {
	return Decode.ParseNode(file, data, ShortHostname())
}

// ParseCluster parses the content of cluster.toml (config.Decoder.ParseCluster).
func ParseCluster(file string, data []byte, localNode string) (*config.ClusterConfig, error) {
	return Decode.ParseCluster(file, data, localNode)
}

// GetKeyword returns the effective value of a service keyword
// (config.Decoder.GetKeyword); errors name file.
func GetKeyword(file string, data []byte, key string) (string, error) {
	return Decode.GetKeyword(file, data, key)
}

// ServiceSections returns the sections of a service config as written
// (config.Decoder.ServiceSections).
func ServiceSections(file string, data []byte) (map[string]map[string]any, error) {
	return Decode.ServiceSections(file, data)
}

// SetKeyword sets one keyword of a service config and returns the new
// content (config.Decoder.SetKeyword).
func SetKeyword(file string, data []byte, kw string) ([]byte, error) {
	return Decode.SetKeyword(file, data, kw)
}

// AddKeyword is SetKeyword that may add the resource it names
// (config.Decoder.AddKeyword).
func AddKeyword(file string, data []byte, kw string) ([]byte, error) {
	return Decode.AddKeyword(file, data, kw)
}

// UnsetKeyword removes one keyword of a service config and returns the new
// content (config.Decoder.UnsetKeyword).
func UnsetKeyword(file string, data []byte, key string) ([]byte, error) {
	return Decode.UnsetKeyword(file, data, key)
}

// ShortHostname is the host name up to its first dot, lowercased
// ("localhost" when it cannot be read): the node name when node.toml sets
// none.
func ShortHostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	h, _, _ = strings.Cut(h, ".")
	return strings.ToLower(h)
}

// LoadNode reads node.toml. A missing file means every default, the node
// name being the short host name.
func LoadNode(path string) (*config.NodeConfig, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data = nil
	} else if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	return ParseNode(path, data)
}

// LoadCluster reads cluster.toml. A missing file means a one-node cluster
// named "default" whose only member is localNode at 127.0.0.1:10000, with
// no secret. A file holding a secret is refused when users other than its
// owner may read it.
func LoadCluster(path string, localNode string) (*config.ClusterConfig, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ParseCluster(path, nil, localNode)
	} else if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	c, err := ParseCluster(path, data, localNode)
	if err != nil {
		return nil, err
	}
	if c.Secret != "" {
		fi, err := f.Stat()
		if err != nil {
			return nil, &config.Error{File: path, Msg: err.Error()}
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return nil, &config.Error{File: path, Msg: fmt.Sprintf("mode %04o lets other users read the cluster secret: chmod 600 it", perm)}
		}
	}
	return c, nil
}

// LoadService reads services/NAME.toml; the service name is the file name.
func LoadService(path string) (*config.ServiceConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &config.Error{File: path, Msg: "no such file"}
		}
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	return ParseService(path, config.ServiceNameFromFile(path), data)
}

// CheckLocalAddr refuses a node whose own [nodes] entry is a literal IP
// that is not an address of this host (addrs, from net.InterfaceAddrs):
// the node is most likely configured with another member's name. A
// loopback address counts as local when a loopback network holds it.
// Host names are not resolved.
func CheckLocalAddr(n *config.NodeConfig, c *config.ClusterConfig, addrs []net.Addr) error {
	if !c.ListsMembers() {
		return nil
	}
	own, ok := c.Member(n.Name)
	if !ok {
		return nil
	}
	for _, la := range own.LinkAddrs() { // each link's address (bound by the daemon)
		host, _, err := net.SplitHostPort(la)
		if err != nil {
			continue
		}
		ip := net.ParseIP(host)
		if ip == nil || localIP(ip, addrs) {
			continue
		}
		return c.ErrAt(config.SectionNodes, own.Name, "%s is not an address of this host: is this node really %s? (node.name in %s)", ip, own.Name, n.File)
	}
	return nil
}

// localIP tells whether ip is one of addrs (a loopback address counts when
// a loopback network holds it).
func localIP(ip net.IP, addrs []net.Addr) bool {
	for _, a := range addrs {
		switch a := a.(type) {
		case *net.IPNet:
			if a.IP.Equal(ip) || ip.IsLoopback() && a.IP.IsLoopback() && a.Contains(ip) {
				return true
			}
		case *net.IPAddr:
			if a.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// LoadArbitratorConf reads arbitrator.toml: it holds cluster secrets, so a
// file other users may read is refused as cluster.toml is.
func LoadArbitratorConf(path string) (*config.ArbitratorConf, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &config.Error{File: path, Msg: "no such file (the arbitrator's config: [arbitrator] listen, one [cluster.NAME] secret per cluster)"}
		}
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	c, err := Decode.ParseArbitratorConf(path, data)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("mode %04o lets other users read the cluster secrets: chmod 600 it", perm)}
	}
	return c, nil
}
