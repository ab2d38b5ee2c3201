package tomlfile

// An admin's private key: the Ed25519 key whose public half cluster.toml
// [admin_keys] lists, used by svcmgr to sign service configs. It lives on
// the admin's workstation (or wherever the admin keeps it), never on a
// node (docs/security.md, "Admin-signed configs"): one line, the key's
// name and its 32-byte seed in base64, mode 0600.

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"haven/config"
)

// adminKeyTag starts an admin key file.
const adminKeyTag = "haven-admin-key"

// AdminKey is an admin's private key and its name in [admin_keys].
type AdminKey struct {
	Name string
	Priv ed25519.PrivateKey
}

// Public is the text of the key's public half, as [admin_keys] lists it.
func (k AdminKey) Public() string {
	return config.EncodeAdminKey(k.Priv.Public().(ed25519.PublicKey))
}

// GenerateAdminKey makes a new admin key named name and writes it to path
// (mode 0600), never replacing a file.
func GenerateAdminKey(path, name string) (AdminKey, error) {
	if err := config.ValidKeyName(name); err != nil {
		return AdminKey{}, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return AdminKey{}, err
	}
	line := fmt.Sprintf("%s %s %s\n", adminKeyTag, name, base64.StdEncoding.EncodeToString(priv.Seed()))
	if err := writeNewKey(path, []byte(line), "a file exists already: an admin key is never replaced (svcmgr key show --key FILE prints its public key)"); err != nil {
		return AdminKey{}, err
	}
	return AdminKey{Name: name, Priv: priv}, nil
}

// LoadAdminKey reads the admin key at path: a regular file, not a
// symbolic link, that no other user may read.
func LoadAdminKey(path string) (AdminKey, error) {
	data, err := readPrivate(path, "an admin's private key")
	if err != nil {
		return AdminKey{}, err
	}
	f := strings.Fields(string(data))
	var seed []byte
	if len(f) == 3 && f[0] == adminKeyTag && config.ValidKeyName(f[1]) == nil {
		seed, err = base64.StdEncoding.Strict().DecodeString(f[2])
	}
	if len(seed) != ed25519.SeedSize || err != nil {
		// never echo the content
		return AdminKey{}, &config.Error{File: path, Msg: "not an admin key (one line: " + adminKeyTag + " NAME SEED, as svcmgr key generate writes it)"}
	}
	return AdminKey{Name: f[1], Priv: ed25519.NewKeyFromSeed(seed)}, nil
}
