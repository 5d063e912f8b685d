package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testkit"
)

// A node that the seed list does not name is valid only when it will join
// (issue 43, G1); the refusal says what is wrong and both ways out.
func TestConfigValidate_NotASeed_NeedsJoin(t *testing.T) {
	seeds := []Peer{{ID: "s0", RaftAddr: "s0:8090"}, {ID: "s1", RaftAddr: "s1:8090"}, {ID: "s2", RaftAddr: "s2:8090"}}
	cfg := func(id string, willJoin bool) Config {
		c := DefaultConfig()
		c.ID, c.DataDir, c.RaftAddr, c.HTTPAdvertise = id, "/data", "127.0.0.1:8090", "127.0.0.1:8080"
		c.InitialCluster, c.WillJoin = seeds, willJoin
		return c
	}
	for _, ok := range []Config{cfg("s1", false), cfg("s1", true), cfg("s4", true)} {
		if err := ok.Validate(); err != nil {
			t.Errorf("id %s, will join %v: %v", ok.ID, ok.WillJoin, err)
		}
	}
	err := cfg("s4", false).Validate()
	if err == nil {
		t.Fatal("a node outside the seed list and without a join was accepted")
	}
	for _, want := range []string{`initial cluster does not name this node's id "s4"`, "no join address", "s4=<raft host:port>", "--initial-cluster", "--join"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A node outside the seed list, given one with WillJoin, bootstraps nothing on
// its empty data dir: it holds no configuration until the seeds' leader adds
// it, and then holds theirs (issue 43, G1).
func TestOpen_NotASeed_BootstrapsNothingAndIsAddedByTheSeeds(t *testing.T) {
	seeds := startNodes(t, 3, raceTimings)
	var peers []Peer
	for _, s := range seeds {
		peers = append(peers, Peer{ID: s.ID(), RaftAddr: s.RaftAddr()})
	}
	ln := listenLoopback(t)
	cfg := DefaultConfig()
	cfg.ID = "n4"
	cfg.DataDir = filepath.Join(t.TempDir(), "n4")
	cfg.Listener = ln
	cfg.RaftAddr = ln.Addr().String()
	cfg.HTTPAdvertise = "127.0.0.1:4"
	cfg.InitialCluster, cfg.WillJoin = peers, true
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = raceTimings.heartbeat, raceTimings.election, raceTimings.lease
	cfg.Logger = discardLogger()
	cfg.RaftLogLevel = slog.LevelError
	n4 := startNode(t, cfg)
	if own, err := n4.Configuration(); err != nil || len(own) != 0 {
		t.Fatalf("n4's configuration before it is added: %v %v, want none (it must not bootstrap)", own, err)
	}

	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "the seeds' leader to add n4", func() error {
		for _, s := range seeds {
			if _, ok := s.Leadership(); ok {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return s.Join(ctx, "n4", n4.RaftAddr(), cfg.HTTPAdvertise)
			}
		}
		return errors.New("no leader among the seeds yet")
	})
	want := []string{"n1", "n2", "n3", "n4"}
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "n4 to hold the seeds' configuration", func() error {
		own, err := n4.Configuration()
		if err != nil {
			return err
		}
		var ids []string
		for _, p := range own {
			ids = append(ids, p.ID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) || n4.LeaderID() == "" || n4.LeaderID() == "n4" {
			return fmt.Errorf("n4 holds %v and follows %q, want %v under a seed", ids, n4.LeaderID(), want)
		}
		return nil
	})
}
