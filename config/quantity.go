package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MilliCPU is a number of CPU cores in thousandths (TypeCPU): 1500 is 1.5
// cores. Integer arithmetic, so that sums of requests compare exactly.
type MilliCPU int64

// Bytes is an amount of memory in bytes (TypeSize).
type Bytes int64

// maxMilliCPU bounds a CPU value: a million cores.
const maxMilliCPU = 1_000_000_000

// String prints m in cores, without a trailing zero: "0.5", "4", "1.25".
func (m MilliCPU) String() string {
	s := strconv.FormatInt(int64(m)/1000, 10)
	if f := int64(m) % 1000; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
	}
	return s
}

// ParseCPU reads a number of cores: a decimal ("0.5", "2") or a number of
// thousandths of a core with the suffix m ("500m"), at most 3 decimals,
// not negative.
func ParseCPU(s string) (MilliCPU, error) {
	t := strings.TrimSpace(s)
	if milli, ok := strings.CutSuffix(t, "m"); ok {
		i, err := strconv.ParseInt(milli, 10, 64)
		if err != nil || i < 0 || i > maxMilliCPU {
			return 0, fmt.Errorf("invalid cpu %q: want a number of cores (\"0.5\", \"2\") or of thousandths of a core (\"500m\")", s)
		}
		return MilliCPU(i), nil
	}
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" && frac == "" || len(frac) > 3 || strings.ContainsAny(whole+frac, "+-eE") {
		return 0, fmt.Errorf("invalid cpu %q: want a number of cores with at most 3 decimals (\"0.5\", \"2\") or of thousandths of a core (\"500m\")", s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || w > maxMilliCPU/1000 {
		return 0, fmt.Errorf("invalid cpu %q: want a number of cores, at most %d", s, maxMilliCPU/1000)
	}
	var f uint64
	if frac != "" {
		f, err = strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid cpu %q: want a number of cores (\"0.5\", \"2\")", s)
		}
	}
	return MilliCPU(w*1000 + f), nil
}

// cpuFromTOML converts a TOML integer, float or string to MilliCPU.
func cpuFromTOML(raw any) (MilliCPU, error) {
	switch v := raw.(type) {
	case int64:
		if v < 0 || v > maxMilliCPU/1000 {
			return 0, fmt.Errorf("cpu %d out of range (0 to %d cores)", v, maxMilliCPU/1000)
		}
		return MilliCPU(v * 1000), nil
	case float64:
		if v < 0 || v > maxMilliCPU/1000 || math.IsNaN(v) {
			return 0, fmt.Errorf("cpu %v out of range (0 to %d cores)", v, maxMilliCPU/1000)
		}
		m := math.Round(v * 1000)
		if math.Abs(m-v*1000) > 1e-6 {
			return 0, fmt.Errorf("cpu %v: at most 3 decimals", v)
		}
		return MilliCPU(m), nil
	case string:
		return ParseCPU(v)
	}
	return 0, fmt.Errorf("want a number of cores (0.5, 2 or \"500m\"), got %s", tomlTypeName(raw))
}

// The units of a size: binary (KiB, Ki: 1024) and decimal (KB, K: 1000).
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"B", 1},
}

// maxBytes bounds a size: 1 EiB.
const maxBytes = 1 << 60

// String prints b with the largest binary unit that divides it: "512MiB",
// "1536MiB", "1000B".
func (b Bytes) String() string {
	for _, u := range []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.m == 0 {
			return strconv.FormatInt(int64(b)/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// Short prints b rounded to one decimal of the largest binary unit it
// reaches ("7.5GiB"), for messages.
func (b Bytes) Short() string {
	for _, u := range []struct {
		s string
		m float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if float64(b) >= u.m {
			return strings.TrimSuffix(strconv.FormatFloat(float64(b)/u.m, 'f', 1, 64), ".0") + u.s
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// ParseSize reads an amount of memory: an integer of bytes, or a number
// (decimals allowed) with a unit: KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti:
// powers of 1024), KB, MB, GB, TB (or K, M, G, T: powers of 1000), B.
func ParseSize(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	num, mult := t, int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	bad := fmt.Errorf("invalid size %q: want bytes or a number with a unit (\"512MiB\", \"2GiB\", \"1.5G\")", s)
	if num == "" || strings.ContainsAny(num, "+-eExXpP_") {
		return 0, bad
	}
	if i, err := strconv.ParseInt(num, 10, 64); err == nil {
		if i > maxBytes/mult {
			return 0, fmt.Errorf("size %q out of range (at most 1EiB)", s)
		}
		return Bytes(i * mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	v := f * float64(mult)
	if v > maxBytes {
		return 0, fmt.Errorf("size %q out of range (at most 1EiB)", s)
	}
	return Bytes(math.Round(v)), nil
}

// sizeFromTOML converts a TOML integer (bytes) or string to Bytes.
func sizeFromTOML(raw any) (Bytes, error) {
	switch v := raw.(type) {
	case int64:
		if v < 0 || v > maxBytes {
			return 0, fmt.Errorf("size %d out of range (0 to 1EiB)", v)
		}
		return Bytes(v), nil
	case string:
		return ParseSize(v)
	}
	return 0, fmt.Errorf("want a size (an integer of bytes or a string like \"512MiB\"), got %s", tomlTypeName(raw))
}
