package resource

import (
	"regexp"
	"strings"

	"haven/resource/ocf"
)

// What the status shows of a resource (its label and last line) reaches
// every peer and every view: a secret in a parameter, a command line or
// an output line is masked before it is published. Three rules:
//
//   - a parameter whose name says it holds a secret (secretName), or whose
//     description in the agent's meta-data does (secretDesc: rabbitmq's
//     erlang_cookie, "Password for the ..."), shows as ***;
//   - inside any value or line, the value of KEY=VALUE whose KEY says it
//     holds a secret (Filesystem's options=...,password=..., pgsql's
//     primary_conninfo_opt="... password=...", mysql --password=...);
//   - the password of a URL's user:password@ (apache's statusurl).
//
// Masking is by what the text says: a secret that nothing names (a
// password passed as a bare argument) is not recognised; the config file
// itself holds every value in clear, as an app's command line does.

// secretWords are the parts of a name that say it holds a secret.
var secretWords = []string{"pass", "pwd", "secret", "token", "key", "credential", "cookie", "auth"}

// secretName reports whether a parameter or key named name holds a secret.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretDescWords are what a parameter's description says of a secret.
var secretDescWords = []string{"password", "passwd", "passphrase", "secret", "credential", "cookie", "token", "private key", "api key", "access key"}

// secretDesc reports whether the meta-data's description of a parameter
// says it holds a secret.
func secretDesc(p ocf.Parameter) bool {
	d := strings.ToLower(p.ShortDesc + " " + p.LongDesc)
	for _, w := range secretDescWords {
		if strings.Contains(d, w) {
			return true
		}
	}
	return false
}

// secretParams are the parameters of an agent whose meta-data describes
// them as secrets.
func secretParams(md *ocf.Metadata) map[string]bool {
	out := map[string]bool{}
	if md == nil {
		return out
	}
	for _, p := range md.Parameters {
		if secretDesc(p) {
			out[p.Name] = true
		}
	}
	return out
}

var (
	// KEY=VALUE inside a text, KEY naming a secret; the value up to a
	// blank, a comma, a semicolon or an ampersand, or quoted
	secretKV = regexp.MustCompile(`(?i)([a-z0-9_.-]*(?:` + strings.Join(secretWords, "|") + `)[a-z0-9_.-]*)=("[^"]*"|'[^']*'|[^\s,;&"']+)`)
	// scheme://user:password@
	urlPassword = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://[^/\s:@]*):([^/\s@]+)@`)
)

// MaskSecrets masks the secrets a text names: the values of KEY=VALUE
// whose KEY says it holds a secret, and a URL's password.
func MaskSecrets(s string) string {
	if !strings.ContainsAny(s, "=@") {
		return s
	}
	s = secretKV.ReplaceAllString(s, "$1=***")
	return urlPassword.ReplaceAllString(s, "$1:***@")
}
