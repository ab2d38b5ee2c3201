package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// load15 reads the 15-minute load average from /proc/loadavg.
func load15() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[2], 64)
	return v
}

// memAvailPct reads MemAvailable/MemTotal from /proc/meminfo, in percent.
func memAvailPct() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	var total, avail float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(fs[1], 64)
		switch fs[0] {
		case "MemTotal:":
			total = v
		case "MemAvailable:":
			avail = v
		}
	}
	if total == 0 {
		return 0
	}
	return float64(int(avail/total*1000)) / 10
}
