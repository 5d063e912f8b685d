package cluster

import (
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

// askLevel's three answers, over real connections: a node of this release
// (the mux's level service), a binary from before levels (its mux reads the
// service byte and drops the connection, as 9c31607's does), and nothing
// listening.
func TestAskLevel_ReportedNoReportUnreachable(t *testing.T) {
	asker := &Node{cfg: Config{ProbeTimeout: time.Second}, mux: &mux{dial: defaultDial}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answerer := &Node{cfg: Config{Version: "v9.9.9", FeatureLevel: fsm.LevelRaiseAndShards}}
	m := newMux(ln, ln.Addr(), nil, discardLogger(), muxServices{probe: closeConn, lease: closeConn, level: answerer.serveLevel, cert: closeConn})
	t.Cleanup(func() { _ = m.Close() })
	if got := asker.askLevel("new", ln.Addr().String()); got.Report != LevelReported || got.Level != fsm.LevelRaiseAndShards || got.Version != "v9.9.9" {
		t.Fatalf("a node of this release: %+v", got)
	}

	old, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	go func() {
		for range 2 {
			c, err := old.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			_, _ = io.ReadFull(c, b[:])
			_ = c.Close()
		}
	}()
	if got := asker.askLevel("old", old.Addr().String()); got.Report != LevelNoReport || got.Level != fsm.LevelBase {
		t.Fatalf("a binary from before levels: %+v, want no report, level %d", got, fsm.LevelBase)
	}

	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	_ = dead.Close()
	if got := asker.askLevel("gone", addr); got.Report != LevelUnreachable || got.Level != 0 || got.Err == "" {
		t.Fatalf("nothing listening: %+v", got)
	}
}

// FuzzLevelAnswer: any bytes a member sends on the level service (issue
// #31). The answer is exactly one of reported (one JSON report, level at
// least 1, taken as sent), no report (nothing at all: an older binary's
// drop, counted as level 1) or unreachable (with a reason); it never
// panics.
func FuzzLevelAnswer(f *testing.F) {
	f.Add([]byte(`{"version":"v0.31.0","feature_level":3}` + "\n"))
	f.Add([]byte(`{"version":"","feature_level":0}`))
	f.Add([]byte(`{"feature_level":4294967295}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"feature_level":3}{"feature_level":1}`))
	f.Add([]byte("\x00garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := readLevelAnswer("m", body, io.EOF)
		if got.ID != "m" {
			t.Fatalf("id %q", got.ID)
		}
		switch got.Report {
		case LevelNoReport:
			if len(body) != 0 || got.Level != fsm.LevelBase || got.Err != "" {
				t.Fatalf("no report from %q: %+v", body, got)
			}
		case LevelReported:
			var a levelAnswer
			if err := json.Unmarshal(body, &a); err != nil || a.FeatureLevel < fsm.LevelBase || got.Level != a.FeatureLevel || got.Version != a.Version || got.Err != "" {
				t.Fatalf("reported from %q: %+v (decodes to %+v, %v)", body, got, a, err)
			}
		case LevelUnreachable:
			if len(body) == 0 || got.Err == "" || got.Level != 0 {
				t.Fatalf("unreachable from %q: %+v", body, got)
			}
		default:
			t.Fatalf("report %q from %q", got.Report, body)
		}
	})
}
