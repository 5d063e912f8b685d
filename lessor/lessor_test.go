package lessor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/lessor"
)

// replica applies entries to a real FSM in order, as raft would on a
// single node, and records when each lease operation was applied.
type replica struct {
	mu    sync.Mutex
	f     *fsm.FSM
	index uint64
	log   []applied
}

type applied struct {
	op fsm.LeaseOp
	at time.Time
}

func (r *replica) propose(_ context.Context, op fsm.LeaseOp) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index++
	resp := r.f.Apply(&raft.Log{Index: r.index, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeLeaseOp(op)})
	r.log = append(r.log, applied{op, time.Now()})
	return resp, nil
}

func (r *replica) apply(t *testing.T, data []byte) any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index++
	return r.f.Apply(&raft.Log{Index: r.index, Term: 1, Type: raft.LogCommand, Data: data})
}

func (r *replica) ops() []applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]applied(nil), r.log...)
}

func newReplica(t *testing.T) *replica {
	r := &replica{f: fsm.New()}
	now := time.Now().UnixMilli()
	ns := fsm.Namespace{Name: "ns", EpochMs: now - 1000, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1,
		MaxWorkers: 2, LeaseTTLMs: 1000, RecycleDelayMs: 1000}
	if _, ok := r.apply(t, fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: ns, Stamp: fsm.Stamp{NowMs: now}})).(fsm.NamespaceResult); !ok {
		t.Fatal("create namespace")
	}
	return r
}

func (r *replica) grant(t *testing.T, holder string) fsm.Lease {
	t.Helper()
	l, ok := r.apply(t, fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: holder})).(fsm.Lease)
	if !ok {
		t.Fatal("acquire refused")
	}
	return l
}

func waitState(t *testing.T, r *replica, worker int64, want fsm.LeaseState, within time.Duration) time.Time {
	t.Helper()
	var at time.Time
	testkit.EventuallyErr(t, within, 5*time.Millisecond, fmt.Sprintf("worker %d %s", worker, want), func() error {
		leases := r.f.Leases("ns")
		for _, l := range leases {
			if l.WorkerID == worker && l.State == want {
				at = time.Now()
				return nil
			}
		}
		return fmt.Errorf("%+v", leases)
	})
	return at
}

// A lease nobody renews ends a TTL after the lessor saw it and is freed a
// recycle delay after that; renewals push the expiry out; a lessor that
// lost leadership proposes nothing; a new one starts every timer afresh.
func TestLessor_ExpiresRecyclesAndRestartsTimersOnLeadership(t *testing.T) {
	r := newReplica(t)
	ls := lessor.New(r.f, r.propose, lessor.Config{Tick: 10 * time.Millisecond})
	defer ls.LeadershipLost()

	a := r.grant(t, "a")
	ls.LeadershipAcquired()
	start := time.Now()
	var lastRenew time.Time
	// Renew for 1.5 TTLs: the lease must still be held.
	for time.Since(start) < 1500*time.Millisecond {
		lastRenew = time.Now()
		if _, ok := r.apply(t, fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: "ns", WorkerID: a.WorkerID, Token: a.Token})).(fsm.Lease); !ok {
			t.Fatalf("renewal refused after %v: %+v", time.Since(start), r.f.Leases("ns"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ended := waitState(t, r, a.WorkerID, fsm.LeaseEnded, 3*time.Second)
	if d := ended.Sub(lastRenew); d < time.Second {
		t.Fatalf("expired %v after the last renewal, before the 1 s TTL", d)
	}
	freed := waitState(t, r, a.WorkerID, fsm.LeaseFree, 3*time.Second)
	if d := freed.Sub(ended); d < 900*time.Millisecond { // the state was polled up to a tick after the expiry
		t.Fatalf("freed %v after the expiry, before the 1 s recycle delay", d)
	}

	// Leadership lost: a new grant is never expired by this lessor.
	ls.LeadershipLost()
	b := r.grant(t, "b")
	time.Sleep(1500 * time.Millisecond)
	if l := r.f.Leases("ns")[b.WorkerID]; l.State != fsm.LeaseHeld {
		t.Fatalf("a lessor without leadership ended a lease: %+v", l)
	}
	// Leadership won again: the lease gets a full TTL from now, although
	// it was granted 1.5 s ago.
	won := time.Now()
	ls.LeadershipAcquired()
	ended = waitState(t, r, b.WorkerID, fsm.LeaseEnded, 3*time.Second)
	if d := ended.Sub(won); d < time.Second {
		t.Fatalf("a new leader expired a lease %v after it began to serve, before a full TTL", d)
	}
	for _, op := range r.ops() {
		if op.op.Stamp != (fsm.Stamp{}) {
			t.Fatalf("the lessor stamped %+v itself: stamps are the server's to add", op.op)
		}
	}
}

// After a promotion with --advance every namespace rests: the lessor ends
// the rest once the TTL plus the recycle delay have passed since it began
// to serve, never sooner, and then a worker id is granted again.
func TestLessor_EndsAPromotionRestAfterTTLPlusRecycle(t *testing.T) {
	r := newReplica(t)
	r.grant(t, "old")
	for _, op := range []fsm.StandbyOp{{Op: fsm.StandbyAdd, ID: "dr", Bound: fsm.DefaultStandbyBound, TimeoutMs: 1000}, {Op: fsm.StandbyInSync, ID: "dr"}} {
		if resp := r.apply(t, fsm.EncodeStandbyOp(op)); resp != nil {
			t.Fatal(resp)
		}
	}
	if _, err := r.f.Promote("dr", 2*fsm.DefaultStandbyBound, time.Now().UnixMilli(), nil); err != nil {
		t.Fatal(err)
	}
	acquire := func() any {
		return r.apply(t, fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "new"}))
	}
	if _, ok := acquire().(fsm.Lease); ok {
		t.Fatal("a worker id was granted during the rest")
	}
	ls := lessor.New(r.f, r.propose, lessor.Config{Tick: 10 * time.Millisecond})
	defer ls.LeadershipLost()
	start := time.Now()
	ls.LeadershipAcquired()
	var over time.Time
	testkit.EventuallyErr(t, 5*time.Second, 5*time.Millisecond, "the rest to end", func() error {
		if rs := r.f.PromotionRests(); len(rs) != 1 || rs[0].Index != 0 {
			return fmt.Errorf("rests %+v", rs)
		}
		over = time.Now()
		return nil
	})
	if d := over.Sub(start); d < 2*time.Second { // TTL 1 s + recycle 1 s
		t.Fatalf("the rest ended %v after the lessor began, before the TTL plus the recycle delay", d)
	}
	if l, ok := acquire().(fsm.Lease); !ok || l.TimestampFloorMs == 0 {
		t.Fatalf("after the rest: %+v", l)
	}
}
