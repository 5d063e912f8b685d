package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testkit"
)

// probesAnswered is what each node's probe server has answered so far.
func probesAnswered(nodes []*Node) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range nodes {
		out[n.cfg.ID] = n.probeServer.answered.Load()
	}
	return out
}

func leaderOf(t *testing.T, nodes []*Node) *Node {
	t.Helper()
	var l *Node
	testkit.Eventually(t, 15*time.Second, 10*time.Millisecond, "a leader to verify", func() bool {
		for _, n := range nodes {
			if _, err := n.VerifyLeader(t.Context()); err == nil {
				l = n
				return true
			}
		}
		return false
	})
	return l
}

// A round asks only the voters a majority needs: in a 3-node cluster one
// follower per round, not both (each probe costs its voter a wake-up).
func TestProbeRound_AsksOnlyWhatAMajorityNeeds(t *testing.T) {
	nodes := startNodes(t, 3, raceTimings)
	l := leaderOf(t, nodes)
	before := probesAnswered(nodes)
	const rounds = 50
	for range rounds {
		if _, err := l.VerifyLeader(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Answers to a round that already had its majority could still be on
	// their way: give them time to show up before counting.
	time.Sleep(200 * time.Millisecond)
	after := probesAnswered(nodes)
	var total uint64
	for id := range after {
		total += after[id] - before[id]
	}
	if total != rounds {
		t.Fatalf("%d probes answered for %d sequential rounds (%v -> %v), want one a round", total, rounds, before, after)
	}
}

// probeSilencer wraps every node's dials so that the probe connections to
// one address can be made silent: what the leader sends there is dropped,
// so its probe times out, while Raft's own connections are untouched.
type probeSilencer struct {
	mu     sync.Mutex
	silent string // raft address whose probes vanish
}

func (s *probeSilencer) dial(address string, timeout time.Duration) (net.Conn, error) {
	c, err := defaultDial(address, timeout)
	if err != nil {
		return nil, err
	}
	return &silenceableConn{Conn: c, to: address, s: s}, nil
}

func (s *probeSilencer) set(addr string) {
	s.mu.Lock()
	s.silent = addr
	s.mu.Unlock()
}

type silenceableConn struct {
	net.Conn
	to    string
	s     *probeSilencer
	probe bool // the first byte written named the probe service
	wrote bool
}

func (c *silenceableConn) Write(b []byte) (int, error) {
	if !c.wrote && len(b) > 0 {
		c.wrote, c.probe = true, b[0] == muxProbe
	}
	c.s.mu.Lock()
	drop := c.probe && c.s.silent == c.to && len(b) == 8 // a probe request, not the service byte
	c.s.mu.Unlock()
	if drop {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// When the voter a round asks first falls silent, the round asks another
// once the hedge has passed, and later rounds ask that one first.
func TestProbeRound_SilentVoter_HedgedToAnotherThenAvoided(t *testing.T) {
	sil := &probeSilencer{}
	const hedge = 100 * time.Millisecond
	nodes := startNodesWith(t, 3, raceTimings, func(c *Config) {
		c.Dial = sil.dial
		c.ProbeHedge = hedge
	})
	l := leaderOf(t, nodes)
	before := probesAnswered(nodes)
	if _, err := l.VerifyLeader(t.Context()); err != nil {
		t.Fatal(err)
	}
	after := probesAnswered(nodes)
	var first, other *Node
	for _, n := range nodes {
		switch {
		case n == l:
		case after[n.cfg.ID] > before[n.cfg.ID]:
			first = n
		default:
			other = n
		}
	}
	if first == nil || other == nil {
		t.Fatalf("could not tell which follower the round asked: %v -> %v", before, after)
	}

	sil.set(first.cfg.RaftAddr)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := l.VerifyLeader(ctx); err != nil {
		t.Fatalf("round with %s silent: %v", first.cfg.ID, err)
	}
	if took := time.Since(start); took < hedge {
		t.Fatalf("the round took %v: it cannot have waited for the silent voter's hedge of %v", took, hedge)
	}
	// From now on the silent voter is asked last: rounds go to the other.
	mid := probesAnswered(nodes)
	for range 20 {
		if _, err := l.VerifyLeader(ctx); err != nil {
			t.Fatal(err)
		}
	}
	end := probesAnswered(nodes)
	if got := end[other.cfg.ID] - mid[other.cfg.ID]; got != 20 {
		t.Fatalf("%s answered %d of 20 rounds after %s fell silent", other.cfg.ID, got, first.cfg.ID)
	}
}
