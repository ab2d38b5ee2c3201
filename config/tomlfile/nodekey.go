package tomlfile

// This node's private key: the X25519 key pair whose public half the
// members list in cluster.toml [node_keys]. The private half stays in one
// file under the node's root (paths.NodeKey), mode 0600, and is never
// sent, logged or shown (docs/security.md, "Per-node keys"). The one-vote
// arbitrator's key pair is the same kind of file (paths.ArbitratorKey),
// read and written by the same code.

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"haven/config"
	"haven/internal/fsutil"
)

// KeyKind names a kind of key file in its messages.
type KeyKind struct {
	What        string // "node key"
	A           string // "a node key"
	Whose       string // "this node's"
	ShowCmd     string // the command that prints the public key
	GenerateCmd string // the command that makes the key
}

// The two kinds of key files.
var (
	NodeKeyKind       = KeyKind{What: "node key", A: "a node key", Whose: "this node's", ShowCmd: "nodemgr key show", GenerateCmd: "nodemgr key generate"}
	ArbitratorKeyKind = KeyKind{What: "arbitrator key", A: "an arbitrator key", Whose: "the arbitrator's", ShowCmd: "nodemgr arbitrator key show", GenerateCmd: "nodemgr arbitrator key generate"}
)

// GenerateNodeKey makes a new key pair and writes its private key to path (mode
// 0600), durably, and returns it. An existing file is never replaced: a
// new key means that every member's cluster.toml must list it.
func GenerateNodeKey(path string) (*ecdh.PrivateKey, error) { return NodeKeyKind.Generate(path) }

// LoadNodeKey reads this node's private key at path (LoadKey).
func LoadNodeKey(path string) (*ecdh.PrivateKey, error) { return NodeKeyKind.Load(path) }

// Generate makes a new key pair of kind k and writes its private key to
// path (mode 0600), durably, and returns it; an existing file is never
// replaced.
func (k KeyKind) Generate(path string) (*ecdh.PrivateKey, error) {
	existMsg := "the " + k.What + " exists already"
	if _, err := os.Lstat(path); err == nil {
		return nil, &config.Error{File: path, Msg: existMsg + " (" + k.ShowCmd + " prints its public key)"}
	}
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := writeNewKey(path, []byte(base64.StdEncoding.EncodeToString(priv.Bytes())+"\n"), existMsg); err != nil {
		return nil, err
	}
	return priv, nil
}

// writeNewKey writes a private key file at path, mode 0600, durably; an
// existing file is never replaced (exist says so).
func writeNewKey(path string, content []byte, exist string) error {
	err := fsutil.WriteNew(path, content, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return &config.Error{File: path, Msg: exist}
	}
	if err != nil {
		return &config.Error{File: path, Msg: err.Error()}
	}
	return nil
}

// Load reads the private key of kind k at path: a regular file, not a
// symbolic link, that no other user may read.
func (k KeyKind) Load(path string) (*ecdh.PrivateKey, error) {
	data, err := readPrivate(path, k.Whose+" private key")
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(string(data)))
	if err == nil && len(raw) != config.NodeKeySize {
		err = errors.New("wrong size")
	}
	var priv *ecdh.PrivateKey
	if err == nil {
		priv, err = ecdh.X25519().NewPrivateKey(raw)
	}
	if err != nil {
		// never echo the content
		return nil, &config.Error{File: path, Msg: "not " + k.A + " (one line: 32 bytes in base64, as " + k.GenerateCmd + " writes it)"}
	}
	return priv, nil
}

// PublicNodeKey is the text of k's public key, as [node_keys] lists it.
func PublicNodeKey(k *ecdh.PrivateKey) string { return config.EncodeNodeKey(k.PublicKey().Bytes()) }

// readPrivate reads a private key file (what names its key in errors): a
// regular file, not a symbolic link, that no other user may read; at most
// 1 KiB of it.
func readPrivate(path, what string) ([]byte, error) {
	f, err := fsutil.OpenNoFollow(path)
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	if !fi.Mode().IsRegular() {
		return nil, &config.Error{File: path, Msg: "not a regular file"}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("mode %04o lets other users read %s: chmod 600 it (and consider it leaked: generate a new one)", perm, what)}
	}
	data, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, &config.Error{File: path, Msg: err.Error()}
	}
	return data, nil
}
