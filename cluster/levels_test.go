package cluster

import (
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
	m := newMux(ln, ln.Addr(), nil, discardLogger(), func(c net.Conn) { _ = c.Close() }, answerer.serveLevel)
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
