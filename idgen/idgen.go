// Package idgen is a node's Snowflake service: every node, leader or
// follower, makes Snowflake IDs of a namespace in memory, under a worker-id
// lease of its own in that namespace (issue #32).
//
// It does not write a second generator: each namespace's generator is the
// SDK's (client.Snowflake), with its leases, timestamp floors, clock rules
// and fencing, held under the holder name "ticketd/<node id>". The SDK
// client it uses reaches this node's own API with the node's credentials, so
// lease writes go where every other write goes (forwarded to the leader,
// applied through the log), and nothing but the lease keeper ever waits for
// the network: a request is answered from the generator's memory, with no
// Raft round and no forwarding, on whichever node it reaches. A node whose
// lease is valid serves through a leader failover (fail-static); one cut off
// from the quorum stops when its lease could end, by its monotonic clock,
// before the cluster could grant the worker id to anyone else (fail-closed;
// client.Snowflake says why that holds).
package idgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/domain"
)

// HolderPrefix starts the holder name of every lease a node's Snowflake
// service takes: "ticketd/" and the node's ID. The leader revokes a removed
// node's leases by it.
const HolderPrefix = "ticketd/"

// Holder is the holder name of node's leases.
func Holder(node string) string { return HolderPrefix + node }

// Defaults of Config.
const (
	// DefaultFirstLeaseWait is how long the first request of a namespace
	// on a node waits for the node's first lease in it.
	DefaultFirstLeaseWait = 3 * time.Second
	// DefaultLeaseWait is how long a later request waits for a lease when
	// the generator holds none (it is taking a new one): short, so that a
	// node cut off from the quorum answers at once and the caller goes to
	// another node.
	DefaultLeaseWait = 100 * time.Millisecond
	// DefaultMaxClockBackward is the largest backward step of this node's
	// wall clock that a request waits out; a larger one is answered
	// clock-behind.
	DefaultMaxClockBackward = client.DefaultMaxClockBackward
)

// Config configures a Service.
type Config struct {
	// Node is this node's ID; its leases are held as Holder(Node).
	Node string
	// Client reaches this cluster's API with this node's credentials; the
	// leases are taken, renewed and released through it. The Service
	// does not close it.
	Client *client.Client
	// Clock is this node's wall clock with a monotonic reading.
	Clock client.Clock
	// Exists reports whether the namespace is in this node's replica. For
	// one that is not (unknown, or made a moment ago and not applied here
	// yet) the leader is asked through Client before a generator starts:
	// an unknown namespace is answered not-found and leaves nothing behind.
	Exists func(ns string) bool
	// FirstLeaseWait, LeaseWait and MaxClockBackward: 0 means the default.
	FirstLeaseWait, LeaseWait, MaxClockBackward time.Duration
	// Options are added to every generator's (planted faults in tests).
	Options []client.SnowflakeOption
	Logger  *slog.Logger
}

// Service holds the node's generators, one per namespace, each made on the
// namespace's first use (or at Start) and kept until Close.
type Service struct {
	cfg Config
	log *slog.Logger

	mu     sync.RWMutex
	gens   map[string]*generator
	closed bool
}

type generator struct {
	ns string
	g  *client.Snowflake
	// ready is closed once the first wait for a lease is over (or was not
	// needed): requests that come meanwhile wait on it, not on their own.
	ready chan struct{}
	// layout is the namespace's layout once a lease has shown it (it never
	// changes): the worker id of an answer is decoded from its IDs, with
	// no lock and no clock read.
	layout atomic.Pointer[api.Namespace]
}

// New returns a Service with no generators.
func New(cfg Config) (*Service, error) {
	if cfg.Client == nil || cfg.Clock == nil || cfg.Node == "" {
		return nil, errors.New("idgen: Config needs Node, Client and Clock")
	}
	if cfg.FirstLeaseWait <= 0 {
		cfg.FirstLeaseWait = DefaultFirstLeaseWait
	}
	if cfg.LeaseWait <= 0 {
		cfg.LeaseWait = DefaultLeaseWait
	}
	if cfg.MaxClockBackward <= 0 {
		cfg.MaxClockBackward = DefaultMaxClockBackward
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Service{cfg: cfg, log: log.With("component", "snowflake"), gens: map[string]*generator{}}, nil
}

// Start makes the generators of the named namespaces now, so that their
// leases are taken before the first request. A namespace that does not
// exist yet is asked for in the background until an admin creates it.
func (s *Service) Start(namespaces []string) error {
	for _, ns := range namespaces {
		if err := api.ValidateSequenceName(ns); err != nil {
			return fmt.Errorf("snowflake namespace %q: %w", ns, err)
		}
		if _, err := s.generator(context.Background(), ns, false); err != nil {
			return err
		}
	}
	return nil
}

// Take returns n IDs of the namespace (1 <= n <= api.MaxSnowflakeIDs) made
// by this node's generator, strictly increasing. Its errors are of the
// domain kinds: ErrNotFound (no such namespace), ErrClockBehind (with a
// *domain.ClockBehindError), ErrWorkersExhausted, ErrNoWorkerLease,
// ErrTimestampExhausted, ErrInvalid, ErrUnavailable (shutting down, or ctx
// ended). Nothing is served half: on error no ID is returned.
func (s *Service) Take(ctx context.Context, ns string, n int) (domain.SnowflakeIDs, error) {
	if n < 1 || n > api.MaxSnowflakeIDs {
		return domain.SnowflakeIDs{}, domain.Kindf(domain.ErrInvalid, "count must be between 1 and %d, got %d", api.MaxSnowflakeIDs, n)
	}
	gen, err := s.generator(ctx, ns, true)
	if err != nil {
		return domain.SnowflakeIDs{}, err
	}
	select {
	case <-gen.ready:
	case <-ctx.Done():
		return domain.SnowflakeIDs{}, domain.Kindf(domain.ErrUnavailable, "waiting for this node's first worker-id lease in %q: %v", ns, context.Cause(ctx))
	}
	ids, grant, err := gen.g.NextNWithGrant(ctx, n)
	if err != nil {
		return domain.SnowflakeIDs{}, s.kindOf(ns, err)
	}
	out := domain.SnowflakeIDs{Namespace: ns, Node: s.cfg.Node, IDs: ids, WorkerID: -1, LeaseGrantSeq: grant}
	lay := gen.layout.Load()
	if lay == nil {
		if l, ok := gen.g.Lease(); ok {
			lay = &l.Layout
			gen.layout.Store(lay)
		}
	}
	if lay != nil {
		out.WorkerID = client.DecodeSnowflake(*lay, ids[len(ids)-1]).WorkerID
	}
	return out, nil
}

// generator returns the namespace's generator, making it if need be. A
// request (check) for a namespace this replica does not know is refused
// without making one.
func (s *Service) generator(ctx context.Context, ns string, check bool) (*generator, error) {
	s.mu.RLock()
	gen, ok := s.gens[ns]
	closed := s.closed
	s.mu.RUnlock()
	switch {
	case ok:
		return gen, nil
	case closed:
		return nil, domain.Kindf(domain.ErrUnavailable, "this node is shutting down")
	}
	if err := api.ValidateSequenceName(ns); err != nil {
		return nil, domain.Kindf(domain.ErrInvalid, "namespace: %v", err)
	}
	if check && s.cfg.Exists != nil && !s.cfg.Exists(ns) {
		// A linearizable read on the leader (it lists the leases).
		if _, err := s.cfg.Client.Leases(ctx, ns); err != nil {
			return nil, s.kindOf(ns, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, domain.Kindf(domain.ErrUnavailable, "this node is shutting down")
	}
	if gen, ok := s.gens[ns]; ok {
		return gen, nil
	}
	opts := append([]client.SnowflakeOption{
		client.WithHolder(Holder(s.cfg.Node)),
		client.WithClock(s.cfg.Clock),
		client.WithLeaseWait(s.cfg.LeaseWait),
		client.WithMaxClockBackward(s.cfg.MaxClockBackward),
	}, s.cfg.Options...)
	g, err := s.cfg.Client.Snowflake(ns, opts...)
	if err != nil {
		return nil, s.kindOf(ns, err)
	}
	gen = &generator{ns: ns, g: g, ready: make(chan struct{})}
	s.gens[ns] = gen
	go gen.awaitFirstLease(s.cfg.FirstLeaseWait)
	s.log.Info("started a Snowflake generator", "namespace", ns, "holder", Holder(s.cfg.Node))
	return gen, nil
}

// awaitFirstLease holds the namespace's first requests until the generator
// has its first lease, or wait has passed: then they go on, and fail (or
// wait LeaseWait) as any request does without a lease.
func (gen *generator) awaitFirstLease(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = gen.g.Wait(ctx)
	close(gen.ready)
}

// kindOf gives a generator's error its domain kind.
func (s *Service) kindOf(ns string, err error) error {
	var cb *client.ClockBehindError
	switch {
	case errors.As(err, &cb):
		return domain.Wrap(domain.ErrClockBehind, &domain.ClockBehindError{
			Namespace: ns, BehindMs: cb.Behind.Milliseconds() + 1,
			Message: fmt.Sprintf("node %s: namespace %q: %v", s.cfg.Node, ns, err),
		})
	case errors.Is(err, client.ErrExhausted):
		return domain.Kindf(domain.ErrTimestampExhausted, "namespace %q: %v", ns, err)
	case errors.Is(err, client.ErrNamespaceNotFound):
		// The leader's answer says no more than that.
		return domain.Kindf(domain.ErrNotFound, "namespace %q not found", ns)
	case errors.Is(err, client.ErrNoWorkerFree):
		return domain.Kindf(domain.ErrWorkersExhausted, "node %s could not take a worker id of namespace %q: every one is held or resting: %v", s.cfg.Node, ns, err)
	case errors.Is(err, client.ErrLeaseExpired):
		return domain.Kindf(domain.ErrNoWorkerLease, "node %s holds no valid worker-id lease in namespace %q, so it makes none of its IDs now (another node may): %v", s.cfg.Node, ns, err)
	case errors.Is(err, client.ErrInvalidArgument):
		return domain.Kindf(domain.ErrInvalid, "%v", err)
	case errors.Is(err, client.ErrClosed):
		return domain.Kindf(domain.ErrUnavailable, "node %s is shutting down", s.cfg.Node)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return domain.Kindf(domain.ErrUnavailable, "namespace %q: %v", ns, err)
	}
	return err
}

// States describes this node's lease in each namespace it has a generator
// of, by name.
func (s *Service) States() []domain.NodeSnowflake {
	s.mu.RLock()
	gens := make([]*generator, 0, len(s.gens))
	for _, g := range s.gens {
		gens = append(gens, g)
	}
	s.mu.RUnlock()
	slices.SortFunc(gens, func(a, b *generator) int {
		switch {
		case a.ns < b.ns:
			return -1
		case a.ns > b.ns:
			return 1
		}
		return 0
	})
	out := make([]domain.NodeSnowflake, 0, len(gens))
	for _, gen := range gens {
		out = append(out, gen.state())
	}
	return out
}

func (gen *generator) state() domain.NodeSnowflake {
	st := gen.g.Stats()
	out := domain.NodeSnowflake{Namespace: gen.ns, WorkerID: -1, Issued: st.Issued}
	l, ok := gen.g.Lease()
	if ok {
		out.WorkerID, out.TimestampFloorMs = l.WorkerID, l.TimestampFloorMs
		if l.Valid {
			out.LeaseRemaining = max(time.Until(l.Deadline), 0)
		}
	}
	switch {
	case !ok:
		out.Reason = "no worker-id lease"
		if st.LastError != nil {
			out.Reason += ": " + st.LastError.Error()
		}
	case !l.Valid:
		out.Reason = fmt.Sprintf("the lease of worker %d passed its deadline without a renewal", l.WorkerID)
		if st.LastError != nil {
			out.Reason += ": " + st.LastError.Error()
		}
	case st.LastError != nil && errors.Is(st.LastError, client.ErrClockMovedBackwards):
		out.Reason = st.LastError.Error()
	default:
		out.Serving = true
	}
	return out
}

// Close stops every generator and releases its lease, so that its worker id
// starts its recycle delay at once; it waits for the releases (each bounded
// by the client's attempt timeout). Requests after Close are refused.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	gens := s.gens
	s.gens = map[string]*generator{}
	s.mu.Unlock()
	errs := make(chan error, len(gens))
	for _, gen := range gens {
		go func() { errs <- gen.g.Close() }()
	}
	var all []error
	for range gens {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
