package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The [ocf.NAME] resources run an OCF resource agent (docs/resources.md).
// The config checks what it can without the agent: the agent's name and
// the parameter names. The shell checks the parameters against the
// agent's meta-data where the agent is installed (package resource/ocf).

// ocfNameRE is what a provider, an agent type or a parameter name may be:
// they name files under the OCF root and environment variables.
var (
	ocfNameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)
	ocfParamRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ParseAgent splits an agent keyword, "PROVIDER:TYPE" or Pacemaker's
// "ocf:PROVIDER:TYPE", into its provider and type.
func ParseAgent(agent string) (provider, typ string, err error) {
	p := strings.Split(agent, ":")
	if len(p) == 3 && p[0] == "ocf" {
		p = p[1:]
	}
	if len(p) != 2 {
		if len(p) == 3 {
			return "", "", fmt.Errorf("agent %q: class %q: only OCF agents run here (ocf:PROVIDER:TYPE)", agent, p[0])
		}
		return "", "", fmt.Errorf("agent %q: want PROVIDER:TYPE, e.g. heartbeat:IPaddr2", agent)
	}
	for _, s := range p {
		if !ocfNameRE.MatchString(s) {
			return "", "", fmt.Errorf("agent %q: invalid name %q: want letters, digits, _ . + and -", agent, s)
		}
	}
	return p[0], p[1], nil
}

// ValidOCFParam says what is wrong with a parameter name ("" when nothing).
func ValidOCFParam(name string) string {
	if !ocfParamRE.MatchString(name) {
		return fmt.Sprintf("invalid parameter name %q: want letters, digits and _ (it becomes OCF_RESKEY_%s)", name, name)
	}
	if strings.HasPrefix(name, "CRM_meta") {
		return fmt.Sprintf("parameter %q: the CRM_meta_ parameters are set by Haven (timeout, interval), not by the config", name)
	}
	return ""
}

// checkOCF validates agent and the parameter names, skipping the values
// that hold a reference.
func checkOCF(r ResourceConfig) *fieldError {
	if _, _, err := ParseAgent(r.Agent); err != nil {
		return &fieldError{"agent", err.Error()}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Params)) {
		if msg := ValidOCFParam(k); msg != "" {
			return &fieldError{"params", msg}
		}
		if strings.ContainsRune(r.Params[k], 0) {
			return &fieldError{"params." + k, "a NUL byte cannot be passed in the environment"}
		}
	}
	return nil
}

// ErrorAt builds the error of key ("params", "params.ip", "agent") of the
// resource rid of s, located in its file: for the checks the shell makes
// against an agent's meta-data.
func (s *ServiceConfig) ErrorAt(rid, key, msg string) *Error {
	kind, name, _ := strings.Cut(rid, "#")
	e := &Error{File: s.File, Key: rid, Msg: msg}
	if key != "" {
		e.Key += "." + key
	}
	x := indexLines(string(s.Raw))
	first, rest, sub := strings.Cut(key, ".")
	if sub {
		// params = { ip = ... } on one line, or a [ocf.NAME.params] table
		e.Line = x.find([]string{kind, name, first}, rest)
	}
	if e.Line == 0 || !sub {
		e.Line = x.find([]string{kind, name}, first)
	}
	return e
}

// StopBound is the longest stop of the resource: StopLimit when the shell
// set it (an ocf resource's stop_timeout or its agent's advice), else
// Timeout. The quorum's stop budget is the sum of a service's.
func (r ResourceConfig) StopBound() time.Duration {
	if r.StopLimit > 0 {
		return r.StopLimit
	}
	return r.Timeout
}
