package config

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Admin-signed service configs (docs/security.md, "Admin-signed configs").
//
// When cluster.toml lists [admin_keys], a service config is taken only
// with a signature by one of those keys as its last line:
//
//	# haven-signature: NAME SERIAL BASE64
//
// NAME is the admin key's name in [admin_keys], SERIAL a decimal number
// that the cluster never lets go back by more than one config (the node
// core's rule, node/configsigned.go), BASE64 the 64 bytes of an Ed25519
// signature over signedMessage: a fixed tag, the cluster name, the service
// name, the serial and the text before that line. The line is a TOML
// comment: the parser, config distribution and every copy of the text
// carry it as part of the bytes, unchanged.

// SignaturePrefix starts the signature line of a signed service config.
const SignaturePrefix = "# haven-signature: "

// signatureTag starts every signed message: a signature made for anything
// else never verifies as a config's.
const signatureTag = "haven service config signature v1"

// Signature is what a verified signature says: the admin key that made
// it and the serial it signed.
type Signature struct {
	Key    string
	Serial uint64
}

// The reasons a signature is refused (SignatureError.Reason).
const (
	SigUnsigned   = "unsigned"
	SigBad        = "bad signature"
	SigUnknownKey = "unknown key"
	SigReplayed   = "replayed"
)

// SignatureError refuses a config for its signature: Reason is one of
// the Sig constants.
type SignatureError struct {
	File   string
	Line   int
	Reason string
	Msg    string
}

func (e *SignatureError) Error() string {
	return (&Error{File: e.File, Line: e.Line, Msg: "config_refused: " + e.Reason + ": " + e.Msg}).Error()
}

// AdminKeySize is the size of an admin's public key (Ed25519).
const AdminKeySize = ed25519.PublicKeySize

// ValidKeyName reports whether name may name an admin key.
func ValidKeyName(name string) error {
	if len(name) > 64 || !nodeNameRE.MatchString(name) {
		return fmt.Errorf("invalid key name %.70q: want at most 64 letters, digits, _ . and -", name)
	}
	return nil
}

// ParseAdminKey decodes an admin's public key as [admin_keys] lists it:
// 32 bytes in standard base64.
func ParseAdminKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != AdminKeySize {
		return nil, fmt.Errorf("invalid admin key %.60q: want the 44 characters `svcmgr key show` prints (an Ed25519 public key, 32 bytes in base64)", s)
	}
	if bytes.Equal(b, make([]byte, AdminKeySize)) {
		return nil, fmt.Errorf("invalid admin key %.60q: all zeros", s)
	}
	return ed25519.PublicKey(b), nil
}

// EncodeAdminKey is the text of an admin's public key.
func EncodeAdminKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// parseAdminKeys reads [admin_keys] into c.AdminKeys.
func (d *document) parseAdminKeys(c *ClusterConfig) error {
	sec := d.find(SectionAdminKeys, "")
	if sec == nil || len(sec.keys) == 0 {
		return nil
	}
	c.AdminKeys = map[string]ed25519.PublicKey{}
	owner := map[string]string{}
	for _, name := range sec.keys {
		if err := ValidKeyName(name); err != nil {
			return d.errAt(sec, name, "%v", err)
		}
		pub, err := ParseAdminKey(sec.vals[name].(string))
		if err != nil {
			return d.errAt(sec, name, "%v", err)
		}
		if other, dup := owner[string(pub)]; dup {
			return d.errAt(sec, name, "the same key as %s: one name per key", other)
		}
		owner[string(pub)] = name
		c.AdminKeys[name] = pub
	}
	return nil
}

// signedMessage is what a config's signature signs.
func signedMessage(cluster, service string, serial uint64, body []byte) []byte {
	var b bytes.Buffer
	for _, s := range []string{signatureTag, cluster, service, strconv.FormatUint(serial, 10)} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	b.Write(body)
	return b.Bytes()
}

// splitSigned finds the signature line of raw: its last line (a final
// newline allowed) when it starts with SignaturePrefix. body is the text
// before it; line its text; n its line number. found is false when the
// last line is not one; misplaced reports a signature line elsewhere.
func splitSigned(raw []byte) (body []byte, line string, n int, found, misplaced bool) {
	t := bytes.TrimSuffix(raw, []byte("\n"))
	start := bytes.LastIndexByte(t, '\n') + 1
	if last := t[start:]; bytes.HasPrefix(last, []byte(SignaturePrefix)) {
		return raw[:start], string(last), bytes.Count(raw[:start], []byte("\n")) + 1, true, false
	}
	misplaced = bytes.HasPrefix(raw, []byte(SignaturePrefix)) || bytes.Contains(raw, []byte("\n"+SignaturePrefix))
	return raw, "", 0, false, misplaced
}

// parseSignatureLine splits "# haven-signature: NAME SERIAL BASE64".
func parseSignatureLine(line string) (name string, serial uint64, sig []byte, err error) {
	f := strings.Fields(strings.TrimPrefix(line, SignaturePrefix))
	if len(f) != 3 {
		return "", 0, nil, fmt.Errorf("the signature line has %d fields: want NAME SERIAL SIGNATURE", len(f))
	}
	if err := ValidKeyName(f[0]); err != nil {
		return "", 0, nil, err
	}
	if serial, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return "", 0, nil, fmt.Errorf("invalid serial %.30q: want a decimal number", f[1])
	}
	if sig, err = base64.StdEncoding.Strict().DecodeString(f[2]); err != nil || len(sig) != ed25519.SignatureSize {
		return "", 0, nil, fmt.Errorf("the signature is not %d bytes in base64", ed25519.SignatureSize)
	}
	return f[0], serial, sig, nil
}

// SignatureOf reads the signature line of raw without checking it: the
// key's name and the serial (ok false without a well-formed line).
func SignatureOf(raw []byte) (s Signature, ok bool) {
	_, line, _, found, _ := splitSigned(raw)
	if !found {
		return Signature{}, false
	}
	name, serial, _, err := parseSignatureLine(line)
	if err != nil {
		return Signature{}, false
	}
	return Signature{Key: name, Serial: serial}, true
}

// Unsigned is raw without its signature line (raw itself when it has
// none).
func Unsigned(raw []byte) []byte {
	body, _, _, _, _ := splitSigned(raw)
	return body
}

// SignService signs the config raw of service in cluster with the admin
// key name (priv) at serial: the text without its old signature line,
// ending with a newline, then the new line.
func SignService(raw []byte, cluster, service, name string, priv ed25519.PrivateKey, serial uint64) ([]byte, error) {
	if err := ValidKeyName(name); err != nil {
		return nil, err
	}
	if err := ValidServiceName(service); err != nil {
		return nil, err
	}
	body := slices.Clone(Unsigned(raw))
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	sig := ed25519.Sign(priv, signedMessage(cluster, service, serial, body))
	line := fmt.Sprintf("%s%s %d %s\n", SignaturePrefix, name, serial, base64.StdEncoding.EncodeToString(sig))
	return append(body, line...), nil
}

// VerifyService checks the signature of the config raw of service in
// cluster against keys ([admin_keys]); file names it in errors. The
// refusal is a *SignatureError: unsigned (no signature line), unknown key
// (a name keys does not list), bad signature (a line that does not parse,
// or a signature that does not verify: another text, cluster, service or
// serial, or another key of that name).
func VerifyService(file string, raw []byte, cluster, service string, keys map[string]ed25519.PublicKey) (*Signature, error) {
	body, line, n, found, misplaced := splitSigned(raw)
	if !found {
		if misplaced {
			return nil, &SignatureError{File: file, Reason: SigBad, Msg: "the signature line is not the last line: the text after it is not signed (sign it again: svcmgr sign)"}
		}
		return nil, &SignatureError{File: file, Reason: SigUnsigned, Msg: "no signature line (" + strings.TrimSpace(SignaturePrefix) + "), and cluster.toml lists [admin_keys]: an admin signs it (svcmgr sign)"}
	}
	name, serial, sig, err := parseSignatureLine(line)
	if err != nil {
		return nil, &SignatureError{File: file, Line: n, Reason: SigBad, Msg: err.Error()}
	}
	pub, ok := keys[name]
	if !ok {
		return nil, &SignatureError{File: file, Line: n, Reason: SigUnknownKey, Msg: fmt.Sprintf("signed by %q, which cluster.toml [admin_keys] does not list (%s)", name, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))}
	}
	if !ed25519.Verify(pub, signedMessage(cluster, service, serial, body), sig) {
		return nil, &SignatureError{File: file, Line: n, Reason: SigBad, Msg: fmt.Sprintf("the signature of %q does not verify for this text, cluster %q, service %q and serial %d (changed after it was signed, or signed for another cluster or service)", name, cluster, service, serial)}
	}
	return &Signature{Key: name, Serial: serial}, nil
}

// SignatureCheck checks the signatures of the service configs of one
// cluster: its name and [admin_keys]. Without keys it checks nothing.
type SignatureCheck struct {
	Cluster string
	Keys    map[string]ed25519.PublicKey
}

// On reports whether configs must be signed.
func (sc SignatureCheck) On() bool { return len(sc.Keys) > 0 }

// Check verifies the signature of cfg (its File, Name and Raw) and
// records it in cfg.Signature; without keys it does nothing.
func (sc SignatureCheck) Check(cfg *ServiceConfig) error {
	if !sc.On() {
		return nil
	}
	s, err := VerifyService(cfg.File, cfg.Raw, sc.Cluster, cfg.Name, sc.Keys)
	if err != nil {
		return err
	}
	cfg.Signature = s
	return nil
}
