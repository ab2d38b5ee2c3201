package main

import (
	"math"
	"os"
	"testing"
)

func TestFuncPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"haven/daemon.(*Daemon).run":                      "haven/daemon",
		"github.com/hashicorp/memberlist.(*Memberlist).x": "github.com/hashicorp/memberlist",
		"go.uber.org/zap/zapcore.newCounters":             "go.uber.org/zap/zapcore",
		"encoding/json.Unmarshal":                         "encoding/json",
		"runtime.malg":                                    "runtime",
	} {
		if got := funcPackage(fn); got != want {
			t.Errorf("funcPackage(%q) = %q, want %q", fn, got, want)
		}
	}
}

// A record is given to its innermost frame outside the standard library,
// its bytes unsampled by the profile's rate; the runtime's MemStats lines
// are read too.
func TestHeapByOwner(t *testing.T) {
	const text = `heap profile: 3: 3072 [9: 9216] @ heap/1024
1: 2048 [1: 2048] @ 0x1 0x2 0x3
#	0x1	encoding/json.Unmarshal+0x10	/go/src/encoding/json/decode.go:1
#	0x2	haven/heartbeat.decodeJSON+0x20	/src/heartbeat/x.go:2
#	0x3	haven/daemon.(*Daemon).loop+0x30	/src/daemon/y.go:3

2: 1024 [8: 7168] @ 0x4 0x5
#	0x4	strings.Repeat+0x1	/go/src/strings/s.go:1
#	0x5	runtime.main+0x2	/go/src/runtime/proc.go:1

# runtime.MemStats
# HeapInuse = 4096
# Stack = 512 / 1024
`
	pkgs, funcs, total := heapByOwner(text)
	// rate 512: a record of 2048 bytes in objects of 2048 stands for
	// 2048/(1-exp(-4)); 1024 bytes in objects of 512 for 1024/(1-exp(-1))
	hb := 2048 / (1 - math.Exp(-4))
	st := 1024 / (1 - math.Exp(-1))
	if math.Abs(total-(hb+st)) > 1 {
		t.Errorf("total %.0f, want %.0f", total, hb+st)
	}
	if len(pkgs) != 2 || pkgs[0].name != "haven/heartbeat" || math.Abs(pkgs[0].bytes-hb) > 1 || pkgs[1].name != "strings" {
		t.Errorf("by package: %+v", pkgs)
	}
	if funcs[0].name != "haven/heartbeat.decodeJSON" {
		t.Errorf("by function: %+v", funcs)
	}
	ms := memStats(text)
	if ms["HeapInuse"] != 4096 || ms["StackInuse"] != 512 || ms["StackSys"] != 1024 {
		t.Errorf("memStats: %v", ms)
	}
}

// The test binary's own mappings: its program file is text and read-only
// data, and something is anonymous.
func TestSmapsByKind(t *testing.T) {
	parts, err := smapsByKind(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"text", "rodata", "data+bss", "anon"} {
		if parts[k].rss == 0 {
			t.Errorf("%s: nothing resident (%+v)", k, parts)
		}
	}
	if parts["text"].anon != 0 {
		t.Errorf("text has anonymous pages: %+v", parts["text"])
	}
}
