package config

import (
	"fmt"
	"maps"
	pathpkg "path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The [container.NAME] resources run one container each through the
// engine's command line (docs/resources.md, package resource). The config
// checks what it can without the engine; what is not built yet (network modes other than host and bridge,
// named volumes) is refused here.

var (
	// envNameRE is what an environment variable name may be.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// memoryRE is a memory limit: bytes with an optional unit.
	memoryRE = regexp.MustCompile(`^[0-9]+[bkmgBKMG]?$`)
	// capRE is a capability name, with or without its CAP_ prefix.
	capRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	// userRE is a user and an optional group, names or ids.
	userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$`)
)

// ContainerReservedEnv are the variables Haven sets in every container.
var ContainerReservedEnv = []string{"HAVEN_SVCNAME", "HAVEN_NODENAME", "HAVEN_RID", "HAVEN_FENCING_TOKEN"}

// checkContainer validates a container section, skipping the values that
// hold a reference (checked again once expanded).
func checkContainer(r ResourceConfig) *fieldError {
	ref := func(s string) bool { return strings.Contains(s, "{") }
	switch {
	case r.Image == "" && r.Rootfs == "":
		return &fieldError{"image", "a container needs an image (or a rootfs directory)"}
	case r.Image != "" && r.Rootfs != "":
		return &fieldError{"rootfs", "set image or rootfs, not both"}
	case r.Image != "" && !ref(r.Image) && (strings.ContainsAny(r.Image, " \t\n") || strings.HasPrefix(r.Image, "-")):
		return &fieldError{"image", fmt.Sprintf("invalid image reference %q", r.Image)}
	case r.Rootfs != "" && !ref(r.Rootfs) && (!pathpkg.IsAbs(r.Rootfs) || pathpkg.Clean(r.Rootfs) == "/"):
		return &fieldError{"rootfs", fmt.Sprintf("%q: want an absolute path other than /", r.Rootfs)}
	}
	if r.Rootfs != "" && r.Engine == "docker" {
		return &fieldError{"rootfs", "docker runs images only (it has no --rootfs): import the directory as an image (tar -C DIR -c . | docker import - IMAGE) and set image"}
	}
	if r.Rootfs != "" && r.Pull != "never" {
		return &fieldError{"pull", "a rootfs is not pulled: leave pull out"}
	}
	if fe := checkPorts(r); fe != nil {
		return fe
	}
	for _, k := range slices.Sorted(maps.Keys(r.ContainerEnv)) {
		if !envNameRE.MatchString(k) {
			return &fieldError{"env", fmt.Sprintf("invalid variable name %q: want letters, digits and _", k)}
		}
		if slices.Contains(ContainerReservedEnv, k) {
			return &fieldError{"env", fmt.Sprintf("%s is set by Haven", k)}
		}
		if strings.ContainsRune(r.ContainerEnv[k], 0) {
			return &fieldError{"env." + k, "a NUL byte cannot be passed in the environment"}
		}
	}
	for _, v := range r.Volumes {
		if ref(v) {
			continue
		}
		if msg := checkVolume(v); msg != "" {
			return &fieldError{"volumes", msg}
		}
	}
	if r.EnvFile != "" && !ref(r.EnvFile) && (!pathpkg.IsAbs(r.EnvFile) || strings.HasSuffix(r.EnvFile, "/")) {
		return &fieldError{"env_file", fmt.Sprintf("%q: want the absolute path of a file", r.EnvFile)}
	}
	for i, caps := range [][]string{r.CapAdd, r.CapDrop} {
		key := []string{"cap_add", "cap_drop"}[i]
		for _, c := range caps {
			if !ref(c) && !capRE.MatchString(c) {
				return &fieldError{key, fmt.Sprintf("invalid capability %q: want a name such as NET_BIND_SERVICE or CAP_NET_ADMIN, or ALL", c)}
			}
		}
	}
	if strings.ContainsAny(r.Healthcheck, "\x00\n") {
		return &fieldError{"healthcheck", "the health command is one line: no newline or NUL byte"}
	}
	if r.User != "" && !ref(r.User) && !userRE.MatchString(r.User) {
		return &fieldError{"user", fmt.Sprintf("invalid user %q: want USER or USER:GROUP (names or ids)", r.User)}
	}
	if r.Memory != "" && !ref(r.Memory) && !memoryRE.MatchString(r.Memory) {
		return &fieldError{"memory", fmt.Sprintf("invalid memory limit %q: want a number of bytes with an optional unit b, k, m or g (256m)", r.Memory)}
	}
	if r.CPUs != "" && !ref(r.CPUs) {
		if f, err := strconv.ParseFloat(r.CPUs, 64); err != nil || f <= 0 || f > 4096 {
			return &fieldError{"cpus", fmt.Sprintf("invalid CPU limit %q: want a number of CPUs more than 0 (0.5, 2)", r.CPUs)}
		}
	}
	if strings.HasPrefix(r.Entrypoint, "-") {
		return &fieldError{"entrypoint", fmt.Sprintf("invalid entrypoint %q", r.Entrypoint)}
	}
	if r.StopTimeout < 0 || r.StopTimeout%time.Second != 0 {
		return &fieldError{"stop_timeout", fmt.Sprintf("%s: want whole seconds (the engine counts in seconds)", r.StopTimeout)}
	}
	if r.StopTimeout >= r.Timeout {
		return &fieldError{"stop_timeout", fmt.Sprintf("%s is not less than timeout (%s): the stop would time out before the engine's SIGKILL", r.StopTimeout, r.Timeout)}
	}
	return nil
}

// checkVolume says what is wrong with a volume ("" when nothing).
func checkVolume(v string) string {
	p := strings.Split(v, ":")
	if len(p) < 2 || len(p) > 3 {
		return fmt.Sprintf("%q: want HOST:CONTAINER or HOST:CONTAINER:OPTIONS", v)
	}
	if !pathpkg.IsAbs(p[0]) {
		return fmt.Sprintf("%q: the host side %q is not an absolute path (named volumes are not built)", v, p[0])
	}
	if !pathpkg.IsAbs(p[1]) {
		return fmt.Sprintf("%q: the container side %q is not an absolute path", v, p[1])
	}
	if len(p) == 3 && (p[2] == "" || strings.ContainsAny(p[2], " \t")) {
		return fmt.Sprintf("%q: invalid options %q", v, p[2])
	}
	return ""
}
