package svcmgr

import (
	"encoding/json"
	"testing"
)

func TestLogEntryParsesTheServiceLogLine(t *testing.T) {
	cases := []struct {
		line string
		want LogEntry
	}{
		{"2025-03-01T12:00:00.123+01:00 app#main web started on n1",
			LogEntry{Time: "2025-03-01T12:00:00.123+01:00", Node: "n1", Service: "web", RID: "app#main", Message: "web started on n1"}},
		{"2025-03-01T12:00:01.000Z - start: admin start --local",
			LogEntry{Time: "2025-03-01T12:00:01.000Z", Node: "n1", Service: "web", Message: "start: admin start --local"}},
		// the message keeps its spaces
		{"2025-03-01T12:00:02.500Z app#main status down -> up  (pid  42)",
			LogEntry{Time: "2025-03-01T12:00:02.500Z", Node: "n1", Service: "web", RID: "app#main", Message: "status down -> up  (pid  42)"}},
		{"2025-03-01T12:00:03.000Z ip#vip ",
			LogEntry{Time: "2025-03-01T12:00:03.000Z", Node: "n1", Service: "web", RID: "ip#vip"}},
		// a line of another form (the rest of a multi-line message): all message
		{"  at line 2 of the output", LogEntry{Node: "n1", Service: "web", Message: "  at line 2 of the output"}},
		{"not-a-time app#main x", LogEntry{Node: "n1", Service: "web", Message: "not-a-time app#main x"}},
	}
	for _, c := range cases {
		if got := ParseLogLine("n1", "web", c.line); got != c.want {
			t.Errorf("ParseLogLine(%q)\n got %+v\nwant %+v", c.line, got, c.want)
		}
	}
	b, _ := json.Marshal(ParseLogLine("n1", "web", "2025-03-01T12:00:01.000Z - start ok"))
	if want := `{"time":"2025-03-01T12:00:01.000Z","node":"n1","svc":"web","rid":"","message":"start ok"}`; string(b) != want {
		t.Fatalf("json %s, want %s", b, want)
	}
}
