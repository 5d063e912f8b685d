package cluster

import (
	"context"
	"errors"
	"fmt"
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

// openUnstarted opens a single bootstrapping node in dir without starting it.
func openUnstarted(t *testing.T, dir string) *Node {
	t.Helper()
	n, err := openOnly(t, dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return n
}

// openOnly is Open of a single bootstrapping node in dir, with its error.
func openOnly(t *testing.T, dir string) (*Node, error) {
	t.Helper()
	ln := listenLoopback(t)
	cfg := DefaultConfig()
	cfg.ID = "n1"
	cfg.DataDir = dir
	cfg.Listener = ln
	cfg.RaftAddr = ln.Addr().String()
	cfg.HTTPAdvertise = "127.0.0.1:1"
	cfg.Bootstrap = true
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = fastTimings.heartbeat, fastTimings.election, fastTimings.lease
	cfg.Logger = discardLogger()
	return Open(cfg, fsm.New())
}

// A node that was opened and never started (its owner failed to build
// what it serves) is closed by Shutdown: the Raft port, the store's file
// lock and every goroutine are released.
func TestOpen_NeverStarted_ShutdownReleasesEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	n := openUnstarted(t, dir)
	if err := n.Shutdown(context.Background(), true); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", n.cfg.RaftAddr, time.Second); err == nil {
		c.Close()
		t.Fatal("the Raft port still accepts connections")
	}
	// bolt holds an exclusive lock on raft.db while open: reopening waits
	// on it forever if Shutdown left the store open.
	again := openUnstarted(t, dir)
	if err := again.Shutdown(context.Background(), false); err != nil {
		t.Fatalf("shutdown of the reopened node: %v", err)
	}
}

type recordingListener struct{ acquired chan Leadership }

func (l recordingListener) LeadershipAcquired(ld Leadership) { l.acquired <- ld }
func (l recordingListener) LeadershipLost(Leadership)        {}
func (l recordingListener) RaiseApplying(string, int64)      {}

// Open then Start: the listener given to Start hears of the leadership a
// bootstrapped node wins as soon as Raft runs, and Start runs only once.
func TestStart_DeliversLeadershipToItsListener_Once(t *testing.T) {
	n := openUnstarted(t, t.TempDir())
	t.Cleanup(func() { _ = n.Shutdown(context.Background(), false) })
	l := recordingListener{acquired: make(chan Leadership, 4)}
	if err := n.Start(l); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case ld := <-l.acquired:
		if ld.Term < 1 {
			t.Fatalf("leadership in term %d", ld.Term)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never heard of the leadership")
	}
	if err := n.Start(l); err == nil {
		t.Fatal("a second Start was accepted")
	}
}

// TestShutdown_UnderLoad_NoApplyLeftWaiting: hashicorp/raft answers no
// future whose entry had committed but not yet reached the FSM when Raft
// shut down (runFSM returns with batches still queued; hashicorp/raft#498),
// so a goroutine waiting on such a future waited forever. CI's goleak saw
// one. Shutting a leader down while proposals stream in must leave every
// proposal answered and nothing waiting.
func TestShutdown_UnderLoad_NoApplyLeftWaiting(t *testing.T) {
	before := goleak.IgnoreCurrent()
	const rounds, proposers = 8, 16
	for round := range rounds {
		n := openSingleNode(t)
		applyEventually(t, []*Node{n}, fsm.EncodeSetMember(fsm.SetMember{ID: "x", RaftAddr: "127.0.0.1:1"}), 10*time.Second)
		stop := make(chan struct{})
		done := make(chan error, proposers)
		for p := range proposers {
			go func() {
				cmd := fsm.EncodeSetMember(fsm.SetMember{ID: fmt.Sprintf("p%d", p), RaftAddr: "127.0.0.1:1"})
				for i := 0; i < 100_000; i++ {
					select {
					case <-stop:
						done <- nil
						return
					default:
					}
					_, err := n.Apply(context.Background(), cmd)
					if err != nil && !errors.Is(err, ErrShutdown) && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrLeadershipLost) {
						done <- fmt.Errorf("round %d: apply: %w", round, err)
						return
					}
				}
				done <- nil
			}()
		}
		time.Sleep(time.Duration(50+20*round) * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := n.Shutdown(ctx, false)
		cancel()
		if err != nil {
			t.Fatalf("round %d: shutdown: %v", round, err)
		}
		close(stop)
		for range proposers {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	goleak.VerifyNone(t, before)
}
