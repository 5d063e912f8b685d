package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/fsm"
)

func closeConn(c net.Conn) { _ = c.Close() }

type timings struct{ heartbeat, election, lease time.Duration }

var (
	// fastTimings suit a single node: its elections need no peer.
	fastTimings = timings{100 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond}
	// raceTimings are those of internal/testcluster: fast, yet calm under
	// the race detector on two cores.
	raceTimings = timings{300 * time.Millisecond, 300 * time.Millisecond, 150 * time.Millisecond}
)

// startNodes starts a cluster of n nodes on 127.0.0.1 ports, shut down when
// the test ends; a single node bootstraps itself, more bootstrap from one
// initial cluster.
func startNodes(t testing.TB, n int, tm timings) []*Node {
	t.Helper()
	return startNodesWith(t, n, tm, nil)
}

// startNodesWith is startNodes with tweak applied to every node's config.
func startNodesWith(t testing.TB, n int, tm timings, tweak func(*Config)) []*Node {
	t.Helper()
	dir := t.TempDir()
	lns := make([]net.Listener, n)
	var peers []Peer
	for i := range lns {
		lns[i] = listenLoopback(t)
		t.Cleanup(func() { _ = lns[i].Close() }) // if its node never took it
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: lns[i].Addr().String()})
	}
	var nodes []*Node
	for i, p := range peers {
		cfg := DefaultConfig()
		cfg.ID = p.ID
		cfg.DataDir = filepath.Join(dir, p.ID)
		cfg.Listener = lns[i]
		cfg.RaftAddr = p.RaftAddr
		cfg.HTTPAdvertise = fmt.Sprintf("127.0.0.1:%d", 1+i)
		if n == 1 {
			cfg.Bootstrap = true
		} else {
			cfg.InitialCluster = peers
		}
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = tm.heartbeat, tm.election, tm.lease
		cfg.CommitTimeout = 5 * time.Millisecond
		cfg.ProbeTimeout = 500 * time.Millisecond
		cfg.Logger = discardLogger()
		cfg.RaftLogLevel = slog.LevelError
		if os.Getenv("TICKETD_TEST_LOG") != "" {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			cfg.RaftLogLevel = slog.LevelInfo
		}
		if tweak != nil {
			tweak(&cfg)
		}
		nodes = append(nodes, startNode(t, cfg))
	}
	return nodes
}

// startNode opens and starts a node from cfg, and shuts it down when the
// test ends.
func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	node, err := Open(cfg, fsm.New())
	if err != nil {
		t.Fatalf("open %s: %v", cfg.ID, err)
	}
	t.Cleanup(func() { _ = node.Shutdown(context.Background(), false) })
	if err := node.Start(nil); err != nil {
		t.Fatalf("start %s: %v", cfg.ID, err)
	}
	return node
}
