package cluster

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ticketd/ticketd/fsm"
)

func openSingleNode(t *testing.T) *Node {
	t.Helper()
	return startNodes(t, 1, fastTimings)[0]
}

// TestShutdown_RaftHangs_ReturnsAtTheDeadline: when Raft does not stop
// (hashicorp/raft #612 made a leader hang in Shutdown), Shutdown returns
// once its context ends, with the context's error, and has closed the
// Raft port.
func TestShutdown_RaftHangs_ReturnsAtTheDeadline(t *testing.T) {
	n := openSingleNode(t)
	realStop := n.stopRaft
	release := make(chan struct{})
	n.stopRaft = func() error { <-release; return realStop() }
	defer func() { close(release) }()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := n.Shutdown(ctx, false)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a hanging Raft returned %v, want the deadline", err)
	}
	// The deadline plus the one-second grace, with room for a slow machine.
	if took > 5*time.Second {
		t.Fatalf("Shutdown took %v past a 300ms deadline", took)
	}
	if c, err := net.DialTimeout("tcp", n.cfg.RaftAddr, time.Second); err == nil {
		c.Close()
		t.Fatal("the Raft port still accepts connections after a timed-out shutdown")
	}
}

func TestShutdown_Normal_ClosesEverything(t *testing.T) {
	n := openSingleNode(t)
	if err := n.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", n.cfg.RaftAddr, time.Second); err == nil {
		c.Close()
		t.Fatal("the Raft port still accepts connections")
	}
}

// TestShutdown_ThreeNodes_NoGoroutineOrConnectionLeft: hashicorp/raft's
// NetworkTransport.Close closes neither its pooled outgoing connections nor
// the incoming ones it serves, so every node's handler goroutines waited on
// connections that nothing would ever close, in a process that outlives its
// nodes (the in-process tests; an embedding program). Shutting all nodes
// down must leave nothing running.
func TestShutdown_ThreeNodes_NoGoroutineOrConnectionLeft(t *testing.T) {
	before := goleak.IgnoreCurrent()
	nodes := startNodes(t, 3, raceTimings)
	applyEventually(t, nodes, fsm.EncodeSetMember(fsm.SetMember{ID: "x", RaftAddr: "127.0.0.1:1"}), 10*time.Second)
	for _, n := range nodes {
		if err := n.Shutdown(context.Background(), false); err != nil {
			t.Fatalf("shutdown %s: %v", n.ID(), err)
		}
	}
	goleak.VerifyNone(t, before)
}
