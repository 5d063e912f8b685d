// Package lessor runs the leader's lease timers: it ends a worker-id lease
// whose TTL has elapsed since the leader applied its grant or last renewal,
// and frees the worker id once the recycle delay has elapsed since the lease
// ended, by proposing expiry and recycle entries (fsm.LeaseOp). Time here is
// Go's monotonic clock on the leader: no wall clock, the leader's or anyone
// else's, decides when a lease ends. As in etcd's lessor, a new leader
// starts every timer afresh, with a full TTL or recycle delay from when it
// begins to serve, so a lease can outlive its TTL across a failover but never
// falls short of it.
package lessor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// State is the replica's lease state (an *fsm.FSM).
type State interface {
	LeaseChanges() uint64
	LeaseTimers() ([]fsm.LeaseTimer, uint64)
}

// ProposeFunc proposes a lease operation and returns once it has been
// applied (with the FSM's answer) or has failed.
type ProposeFunc func(ctx context.Context, op fsm.LeaseOp) (any, error)

// Config tunes the lessor.
type Config struct {
	// Tick is how often the lessor looks for lease changes and due timers;
	// a timer fires up to a Tick late (never early). Default 50 ms.
	Tick time.Duration
	// ProposeTimeout bounds one proposal. Default 5 s.
	ProposeTimeout time.Duration
	Logger         *slog.Logger
	// Metrics, if set, counts the entries proposed.
	Metrics *metrics.Metrics
}

// Lessor holds the timers while this node serves as leader.
type Lessor struct {
	state   State
	propose ProposeFunc
	cfg     Config
	log     *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a lessor that does nothing until LeadershipAcquired.
func New(state State, propose ProposeFunc, cfg Config) *Lessor {
	if cfg.Tick <= 0 {
		cfg.Tick = 50 * time.Millisecond
	}
	if cfg.ProposeTimeout <= 0 {
		cfg.ProposeTimeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Lessor{state: state, propose: propose, cfg: cfg, log: log.With("component", "lessor")}
}

// LeadershipAcquired starts the timers of every held and resting lease,
// each with its full wait from now. Call it once the node serves as leader
// (after its Barrier), so that the state holds every earlier renewal.
func (l *Lessor) LeadershipAcquired() {
	l.LeadershipLost()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.mu.Lock()
	l.cancel, l.done = cancel, done
	l.mu.Unlock()
	go func() {
		defer close(done)
		l.run(ctx)
	}()
}

// LeadershipLost stops the timers and forgets them; it returns once no
// proposal of this leadership is in flight any more.
func (l *Lessor) LeadershipLost() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

type timerKey struct {
	namespace string
	worker    int64
}

type timer struct {
	fsm.LeaseTimer
	due      time.Time // monotonic
	proposed bool      // its entry was applied (or found stale): wait for the state to move on
}

func (l *Lessor) run(ctx context.Context) {
	timers := map[timerKey]*timer{}
	seen, scanned := uint64(0), false
	tick := time.NewTicker(l.cfg.Tick)
	defer tick.Stop()
	for {
		if changes := l.state.LeaseChanges(); !scanned || changes != seen {
			seen, scanned = l.scan(timers), true
		}
		for _, t := range timers {
			if ctx.Err() != nil {
				return
			}
			if t.proposed || time.Now().Before(t.due) {
				continue
			}
			l.fire(ctx, t)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scan starts a timer for every lease that is new, renewed, ended or
// granted anew since the last scan, and drops the timers of leases that are
// free. A timer starts when the scan sees the change, which is after the
// entry was applied, so it can only fire late.
func (l *Lessor) scan(timers map[timerKey]*timer) uint64 {
	list, changes := l.state.LeaseTimers()
	now := time.Now()
	live := make(map[timerKey]bool, len(list))
	for _, lt := range list {
		k := timerKey{lt.Namespace, lt.WorkerID}
		live[k] = true
		if cur, ok := timers[k]; ok && cur.Token == lt.Token && cur.Version == lt.Version && cur.State == lt.State {
			continue
		}
		timers[k] = &timer{LeaseTimer: lt, due: now.Add(time.Duration(lt.WaitMs) * time.Millisecond)}
	}
	for k := range timers {
		if !live[k] {
			delete(timers, k)
		}
	}
	return changes
}

// fire proposes the timer's entry: an expiry for a held lease, a recycle
// for an ended one, the end of a namespace's rest after a promotion. The entry names the lease's token and version, so it
// changes nothing if the lease moved on meanwhile (a renewal that was
// applied after the scan); a failed proposal is tried again a tick later.
func (l *Lessor) fire(ctx context.Context, t *timer) {
	op := fsm.LeaseOp{Op: fsm.LeaseOpExpire, Namespace: t.Namespace, WorkerID: t.WorkerID, Token: t.Token, Version: t.Version}
	switch t.State {
	case fsm.LeaseEnded:
		op.Op = fsm.LeaseOpRecycle
	case fsm.LeaseResting:
		// A namespace resting after a promotion: every worker id is
		// free to grant once the TTL plus the recycle delay passed.
		op = fsm.LeaseOp{Op: fsm.LeaseOpEndPromotionRest, Namespace: t.Namespace, Version: t.Version}
	}
	pctx, cancel := context.WithTimeout(ctx, l.cfg.ProposeTimeout)
	defer cancel()
	resp, err := l.propose(pctx, op)
	if err == nil {
		if rerr, ok := resp.(error); ok {
			err = rerr
		}
	}
	switch {
	case err == nil:
		l.log.Info("lease "+op.Op+"d", "namespace", op.Namespace, "worker", op.WorkerID, "token", op.Token)
		l.cfg.Metrics.ObserveLeaseTimer(op.Op, "applied")
		t.proposed = true
	case errors.Is(err, fsm.ErrLeaseTimerStale), errors.Is(err, fsm.ErrNamespaceNotFound):
		l.cfg.Metrics.ObserveLeaseTimer(op.Op, "stale")
		t.proposed = true
	default:
		if ctx.Err() == nil {
			l.cfg.Metrics.ObserveLeaseTimer(op.Op, "failed")
			l.log.Warn("lease "+op.Op+" not applied; retrying", "namespace", op.Namespace, "worker", op.WorkerID, "err", err)
		}
	}
}
