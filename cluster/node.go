// Package cluster owns hashicorp/raft for one ticketd node: its stores and
// transport, bootstrap, membership, the leader loop (a Barrier before a new
// leader serves), and the quorum check that makes ranges served from memory
// linearizable. DESIGN.md says why each piece is the way it is.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
)

// Leadership identifies one stretch of leadership of this node: Epoch counts
// every change of leadership state on this node, Term is Raft's term. Blocks
// handed to a leader belong to one Leadership and die with it.
type Leadership struct {
	Epoch uint64
	Term  uint64
}

// LeadershipListener is told when this node starts serving as leader (after
// its Barrier) and when it stops, from one goroutine, in order; and of every
// applied raise, from raft's FSM goroutine.
type LeadershipListener interface {
	LeadershipAcquired(Leadership)
	LeadershipLost(Leadership)
	// RaiseApplied is called on every node right after a raise of
	// sequence to atLeast applied, before the raise is acknowledged: a
	// serving leader must serve nothing at or below atLeast from then on.
	// It must not block (raft's FSM goroutine waits for it).
	RaiseApplied(sequence string, atLeast int64)
}

// Node is one member of a ticketd cluster.
type Node struct {
	cfg   Config
	log   *slog.Logger
	fsm   *fsm.FSM
	hlog  hclog.Logger // hashicorp/raft's logger, into log
	rc    *raft.Config // set by Open, for Start
	raft  *raft.Raft   // nil until Start
	store *raftboltdb.BoltStore
	snaps raft.SnapshotStore
	// health watches every write Raft makes to store (issue #19).
	health *storageHealth
	trans  *raft.NetworkTransport
	watch  *leaderWatch // trans as Raft sees it: reads the leader's commit index off its RPCs
	mux    *mux

	probeServer *probeServer
	probeClient *probeClient
	probeOrder  probeOrder
	verifier    *verifier

	started  atomic.Pointer[raft.Raft] // set once Raft runs; read by the probe server
	listener LeadershipListener
	current  atomic.Pointer[Leadership] // non-nil while serving as leader
	leaders  leaderHistory              // the leadership changes seen, for Status
	epoch    atomic.Uint64

	observer *raft.Observer
	obsCh    chan raft.Observation
	// reestablishReq asks the leader loop to end this node's stretch of
	// leadership and start a new one after a Barrier, as if leadership had
	// been lost and won again: for a change of state under the issuer (an
	// applied restore asks, on raft's FSM goroutine, without waiting).
	reestablishReq chan struct{}
	reestablished  reestablishes

	// Every Raft future this node waits on is counted in futures, and none
	// is started once closing is set: Shutdown lets those in flight be
	// answered before it stops Raft, because hashicorp/raft never answers
	// one whose entry committed but had not reached the FSM when it shut
	// down (hashicorp/raft#498), and whoever waited on it would wait
	// forever.
	futuresMu sync.Mutex
	closing   bool
	futures   sync.WaitGroup

	shutdownOnce sync.Once
	shutdownCh   chan struct{}
	wg           sync.WaitGroup
	// stopRaft shuts Raft down and waits for it (a seam so a test can
	// make it hang).
	stopRaft func() error
}

// Open prepares a node without starting Raft: it opens (or creates) the
// stores in cfg.DataDir, opens the Raft port, and bootstraps a new cluster if
// cfg asks for one and the stores are empty. Start then runs Raft. The two
// steps let the parts that serve leadership (the issuer, the lease timers)
// be built on the node before the node can tell them anything. A node that
// is never started is closed with Shutdown.
func Open(cfg Config, f *fsm.FSM) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.Logger
	if base == nil {
		base = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	n := &Node{
		cfg:            cfg,
		health:         &storageHealth{m: cfg.Metrics},
		log:            base.With("component", "cluster", "node", cfg.ID),
		hlog:           newRaftLogger(base.With("component", "raft", "node", cfg.ID), cfg.RaftLogLevel),
		fsm:            f,
		obsCh:          make(chan raft.Observation, 64),
		reestablishReq: make(chan struct{}, 1),
		shutdownCh:     make(chan struct{}),
	}
	n.health.onFail = func(err error, kind string) {
		n.log.Error("cannot write to the Raft log: not ready until a write succeeds", "kind", kind, "err", err, "data_dir", cfg.DataDir)
	}
	n.health.onClear = func(down time.Duration) {
		n.log.Info("writes to the Raft log succeed again", "failing_for", down.Round(time.Millisecond))
	}
	ok := false
	defer func() {
		if !ok {
			_ = n.closeNetwork()
			_ = n.closeStore()
		}
	}()
	if err := n.openStorage(); err != nil {
		return nil, err
	}
	if err := n.openNetwork(); err != nil {
		return nil, err
	}
	rc, err := n.raftConfig()
	if err != nil {
		return nil, err
	}
	existing, err := raft.HasExistingState(n.store, n.store, n.snaps)
	if err != nil {
		return nil, fmt.Errorf("read raft state: %w", err)
	}
	if !existing {
		if err := n.bootstrap(rc); err != nil {
			return nil, err
		}
	} else if cfg.Bootstrap || len(cfg.InitialCluster) > 0 {
		n.log.Info("data dir holds raft state; resuming it and ignoring the bootstrap settings")
	}
	n.rc = rc
	ok = true
	return n, nil
}

// Start runs Raft and the leader loop; listener (which may be nil) hears of
// every stretch of leadership from then on, each only after its Barrier.
// Call it once, after Open.
func (n *Node) Start(listener LeadershipListener) error {
	if n.rc == nil || n.started.Load() != nil {
		return errors.New("cluster: Start needs a node from Open, and runs once")
	}
	n.listener = listener
	r, err := raft.NewRaft(n.rc, appliedFSM{instrumentedFSM{n.fsm, n.cfg.Metrics}, n}, watchedLogStore{n.store, n.health}, watchedStableStore{n.store, n.health}, n.snaps, n.watch)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.stopRaft = func() error { return r.Shutdown().Error() }
	n.started.Store(r)
	if n.cfg.Metrics != nil {
		n.cfg.Metrics.Register(newRaftCollector(n))
	}
	n.observer = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	r.RegisterObserver(n.observer)
	n.wg.Add(1)
	go n.leaderLoop()
	return nil
}

// openStorage opens the log and stable store and the snapshot store.
func (n *Node) openStorage() error {
	if err := checkDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	logPath := filepath.Join(n.cfg.DataDir, "raft.db")
	if err := checkRaftLog(logPath); err != nil {
		return err
	}
	// raft-boltdb fsyncs every write (NoSync is false): an entry counts
	// only once it is on disk.
	store, err := raftboltdb.New(raftboltdb.Options{Path: logPath})
	if err != nil {
		return fmt.Errorf("open raft store: %w", err)
	}
	n.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.DataDir, n.cfg.SnapshotRetain, n.hlog)
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	n.snaps = snaps
	return checkSnapshots(n.cfg.DataDir, snaps)
}

// openNetwork opens the Raft port: the listener (TLS if configured), the
// mux that splits it between Raft and the leadership probe, Raft's
// transport, and the probe's two ends.
func (n *Node) openNetwork() error {
	cfg := n.cfg
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.RaftAddr); err != nil {
			return fmt.Errorf("listen on raft address: %w", err)
		}
	}
	advertise := ln.Addr()
	if cfg.RaftAdvertise != "" {
		// Kept as given, not resolved: a container's host name stays valid
		// when its IP changes on restart.
		if _, _, err := net.SplitHostPort(cfg.RaftAdvertise); err != nil {
			_ = ln.Close()
			return fmt.Errorf("raft advertise address: %w", err)
		}
		advertise = advertiseAddr(cfg.RaftAdvertise)
	}
	if host, _, err := net.SplitHostPort(advertise.String()); err == nil && net.ParseIP(host).IsUnspecified() {
		_ = ln.Close()
		return fmt.Errorf("raft address %s is not reachable by other nodes: set an advertise address", advertise)
	}
	n.probeServer = newProbeServer(func() uint64 {
		// A probe can arrive before Raft has started; term 0 counts for
		// no one.
		if r := n.started.Load(); r != nil {
			return r.CurrentTerm()
		}
		return 0
	})
	dial := cfg.Dial
	if dial == nil {
		dial = defaultDial
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS.Server)
		dial = tlsDial(dial, cfg.TLS.Client)
	}
	n.mux = newMux(ln, advertise, dial, n.log, n.probeServer.serve)
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  raftLayer{n.mux},
		MaxPool: 3,
		// 1 (the default) turns pipelined replication off: see DESIGN.md,
		// "Pipelined replication".
		MaxRPCsInFlight: cfg.MaxRPCsInFlight,
		Timeout:         10 * time.Second,
		Logger:          n.hlog,
	})
	n.watch = newLeaderWatch(n.trans)
	n.probeClient = newProbeClient(n.mux.dial)
	n.verifier = newVerifier(func() (uint64, error) {
		start := time.Now()
		term, err := n.probeRound()
		cfg.Metrics.ObserveVerify(time.Since(start), err)
		return term, err
	})
	return nil
}

// raftConfig is hashicorp/raft's configuration for this node.
func (n *Node) raftConfig() (*raft.Config, error) {
	cfg := n.cfg
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.ShutdownOnRemove = false // a removed node stays up to answer and be shut down by its operator
	rc.BatchApplyCh = true      // concurrent proposals share one disk write and one replication round
	rc.Logger = n.hlog
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raft config: %w", err)
	}
	return rc, nil
}

func (n *Node) bootstrap(rc *raft.Config) error {
	var servers []raft.Server
	switch {
	case n.cfg.Bootstrap:
		servers = []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: raft.ServerAddress(n.mux.advertise.String())}}
	case len(n.cfg.InitialCluster) > 0:
		for _, p := range n.cfg.InitialCluster {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
	default:
		return nil // joining: the leader adds this node
	}
	n.log.Info("bootstrapping a new cluster", "voters", len(servers))
	if err := raft.BootstrapCluster(rc, n.store, n.store, n.snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

// leaderLoop turns Raft's leadership changes into serving and not serving.
// Raft's LeaderCh can drop signals and fires before the new leader has
// applied the entries of earlier terms (raft #508), so the loop watches the
// observer and also polls, and a new leader serves only after a Barrier.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	poll := time.NewTicker(max(n.cfg.HeartbeatTimeout/10, 5*time.Millisecond))
	defer poll.Stop()
	for {
		select {
		case <-n.shutdownCh:
			if cur := n.current.Swap(nil); cur != nil && n.listener != nil {
				n.listener.LeadershipLost(*cur)
			}
			return
		case <-n.obsCh:
		case <-poll.C:
		case <-n.reestablishReq:
			asked := n.reestablished.asked.Load()
			n.reestablish()
			n.reestablished.did(asked)
			continue
		}
		n.checkLeadership()
	}
}

// reestablish ends the current stretch of leadership, if any, and starts a
// new one after a Barrier if this node still leads; only the leader loop
// calls it.
func (n *Node) reestablish() {
	if cur := n.current.Load(); cur != nil {
		n.stepDown(*cur)
	}
	n.checkLeadership()
}

// requestReestablish asks the leader loop to re-establish and returns at
// once; requests made before the loop took the last one are one request.
func (n *Node) requestReestablish() {
	n.reestablished.asked.Add(1)
	select {
	case n.reestablishReq <- struct{}{}:
	default:
	}
}

// AwaitReestablished waits until the leader loop has re-established for
// every request made so far (serving again if this node still leads), or
// ctx ends. A restore's answer waits for it, so that its caller's next
// request meets the new stretch of leadership; the re-establishing itself
// never depends on anyone waiting.
func (n *Node) AwaitReestablished(ctx context.Context) error {
	target := n.reestablished.asked.Load()
	for {
		n.reestablished.mu.Lock()
		done, changed := n.reestablished.done, n.reestablished.changedCh()
		n.reestablished.mu.Unlock()
		if done >= target {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
		case <-n.shutdownCh:
			return ErrShutdown
		}
	}
}

// reestablishes counts the re-establishing asked for and done.
type reestablishes struct {
	asked   atomic.Uint64
	mu      sync.Mutex
	done    uint64
	changed chan struct{} // closed when done moves
}

// changedCh is closed when done next moves; r.mu is held.
func (r *reestablishes) changedCh() chan struct{} {
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// did records that every request up to asked has been handled.
func (r *reestablishes) did(asked uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = max(r.done, asked)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// checkLeadership starts or stops serving to match Raft's state; only the
// leader loop calls it.
func (n *Node) checkLeadership() {
	isLeader := n.raft.State() == raft.Leader
	term := n.raft.CurrentTerm()
	n.leaders.observe(term, n.LeaderID(), time.Now())
	cur := n.current.Load()
	if cur != nil && (!isLeader || cur.Term != term) {
		n.stepDown(*cur)
		cur = nil
	}
	if isLeader && cur == nil {
		n.establish(term)
	}
}

func (n *Node) stepDown(l Leadership) {
	n.cfg.Metrics.LeadershipChanged()
	n.current.Store(nil)
	n.epoch.Add(1)
	n.log.Info("stopped serving as leader", "term", l.Term)
	if n.listener != nil {
		n.listener.LeadershipLost(l)
	}
}

// establish runs the Barrier that makes this node's FSM hold everything
// committed before its term, then starts serving.
func (n *Node) establish(term uint64) {
	if n.cfg.skipBarrier() {
		n.log.Warn("UNSAFE: serving as leader without a Barrier (planted fault)")
	} else if err := n.await(context.Background(), func() raft.Future { return n.raft.Barrier(n.cfg.ElectionTimeout) }); err != nil {
		n.log.Warn("barrier failed; not serving yet", "term", term, "err", err)
		return
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return
	}
	l := Leadership{Epoch: n.epoch.Add(1), Term: term}
	n.cfg.Metrics.LeadershipChanged()
	n.current.Store(&l)
	n.log.Info("serving as leader", "term", term)
	if n.listener != nil {
		n.listener.LeadershipAcquired(l)
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.recordOwnMetadata(l)
	}()
}

// recordOwnMetadata writes this node's addresses into the replicated member
// metadata if they are missing or stale, so followers can forward to it.
func (n *Node) recordOwnMetadata(l Leadership) {
	want := fsm.Member{ID: n.cfg.ID, RaftAddr: n.mux.advertise.String(), HTTPAddr: n.cfg.HTTPAdvertise}
	if m, ok := n.fsm.Member(n.cfg.ID); ok && m == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout)
	defer cancel()
	if _, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember(want))); err != nil {
		n.log.Warn("could not record own metadata", "term", l.Term, "err", err)
	}
}

// Leadership returns the current stretch of leadership, or false when this
// node is not serving as leader.
func (n *Node) Leadership() (Leadership, bool) {
	if l := n.current.Load(); l != nil {
		return *l, true
	}
	return Leadership{}, false
}

// ID returns this node's ID.
func (n *Node) ID() string { return n.cfg.ID }

// RaftAddr returns the Raft address other nodes reach this node at.
func (n *Node) RaftAddr() string { return n.mux.advertise.String() }

// FSM returns the node's state machine, for reads.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Apply proposes a command and waits until it is committed and applied on
// this node, then returns the FSM's response. A business rejection from the
// FSM comes back as the error.
func (n *Node) Apply(ctx context.Context, cmd []byte) (any, error) {
	resp, err := n.applyResponse(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if err, isErr := resp.(error); isErr {
		return nil, err
	}
	return resp, nil
}

// applyResponse is Apply with the FSM's response as it is, a rejection
// included: the error is only the proposal's.
func (n *Node) applyResponse(ctx context.Context, cmd []byte) (any, error) {
	if _, ok := n.Leadership(); !ok {
		return nil, ErrNotLeader
	}
	// raft's timeout bounds only the enqueue; the wait below has ours.
	start := time.Now()
	var f raft.ApplyFuture
	if err := n.await(ctx, func() raft.Future {
		f = n.raft.Apply(cmd, n.cfg.ElectionTimeout)
		return f
	}); err != nil {
		return nil, err
	}
	n.cfg.Metrics.ObserveApply(time.Since(start))
	return f.Response(), nil
}

// await hands Raft a request (start returns its future) and waits for the
// answer, for ctx to end, or for the node to shut down. A node that is
// shutting down starts nothing new. The goroutine that waits on the future
// outlives a caller who stops waiting, until Raft answers: Shutdown waits
// for it (see futures).
func (n *Node) await(ctx context.Context, start func() raft.Future) error {
	n.futuresMu.Lock()
	if n.closing {
		n.futuresMu.Unlock()
		return ErrShutdown
	}
	n.futures.Add(1)
	n.futuresMu.Unlock()
	f := start()
	done := make(chan error, 1)
	go func() {
		defer n.futures.Done()
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return mapRaftError(err)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
	case <-n.shutdownCh:
		return ErrShutdown
	}
}

// ReserveBlocks proposes block requests of one or more sequences as one log
// entry and returns each one's outcome, as the FSM computed it when it
// applied the entry. A lone request is proposed as a ReserveBlock entry
// (type 2), so a single-sequence log reads as it did before batches
// existed; several go as one ReserveBlocks entry (type 11). An error is the
// entry's (not leader, timeout, shut down), and then no outcome is known.
func (n *Node) ReserveBlocks(ctx context.Context, reqs []fsm.BlockRequest) ([]fsm.BlockOutcome, error) {
	stamp := n.Stamp() // for the audit only: no block depends on it
	if len(reqs) == 1 {
		r := reqs[0]
		resp, err := n.applyResponse(ctx, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: r.Name, Count: r.Count, Min: r.Min, Stamp: stamp}))
		if err != nil {
			return nil, err
		}
		switch v := resp.(type) {
		case fsm.Block:
			return []fsm.BlockOutcome{{Block: v}}, nil
		case error:
			return []fsm.BlockOutcome{{Err: v}}, nil
		}
		return nil, fmt.Errorf("reserve block: unexpected FSM response %T", resp)
	}
	resp, err := n.applyResponse(ctx, fsm.EncodeReserveBlocks(fsm.ReserveBlocks{Requests: reqs, Stamp: stamp}))
	if err != nil {
		return nil, err
	}
	switch v := resp.(type) {
	case fsm.BlockBatch:
		return v.Outcomes, nil
	case error:
		return nil, v // the whole entry refused: a bug, since the issuer never proposes an empty or oversized batch
	}
	return nil, fmt.Errorf("reserve blocks: unexpected FSM response %T", resp)
}

// ApplyLeaseOp stamps a lease operation with this leader's clock and ID
// (recorded for operators, never compared) and applies it; the answer is the
// FSM's.
func (n *Node) ApplyLeaseOp(ctx context.Context, op fsm.LeaseOp) (any, error) {
	op.Stamp = n.Stamp()
	return n.Apply(ctx, fsm.EncodeLeaseOp(op))
}

// Stamp is what this node, as leader, writes into entries that carry time:
// its wall clock and its ID. Lease decisions use the FSM's clock, the largest
// stamp applied so far, so every replica decides the same way.
func (n *Node) Stamp() fsm.Stamp {
	return fsm.Stamp{NowMs: n.WallNow().UnixMilli(), Leader: n.cfg.ID}
}

// WallNow reads this node's wall clock (Config.WallClock).
func (n *Node) WallNow() time.Time {
	if n.cfg.WallClock != nil {
		return n.cfg.WallClock()
	}
	return time.Now()
}

// Sequence returns the local FSM's view of a sequence.
func (n *Node) Sequence(name string) (fsm.Sequence, bool) { return n.fsm.Sequence(name) }

// VerifyLeader confirms, with evidence gathered after the call began, that
// this node is still the leader, and returns the term it leads in.
func (n *Node) VerifyLeader(ctx context.Context) (uint64, error) {
	return n.verifier.verify(ctx)
}

// probeRound asks voters for their term. A voter that answers with our term
// has not voted in a later election; a majority of them (counting ourselves)
// proves that no later leader existed when the round started.
//
// It asks only as many voters as a majority still needs, those that answered
// before first (probeOrder): in a 3-node cluster one follower is enough, and
// asking both cost the other a wake-up per round for an answer nobody waits
// for. A voter that fails, answers from an older term, or is silent past the
// hedge is replaced by the next one; the hedge (ProbeHedge) bounds what a
// silently partitioned voter costs the round that first meets it, after
// which it is asked last.
func (n *Node) probeRound() (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return 0, mapRaftError(err)
	}
	var peers []string
	voters, acks := 0, 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == raft.ServerID(n.cfg.ID) {
			acks++
			continue
		}
		peers = append(peers, string(s.Address))
	}
	if acks == 0 {
		return 0, ErrNotLeader
	}
	need := voters/2 + 1
	if acks < need {
		var err error
		if acks, err = n.askVoters(peers, term, acks, need); err != nil {
			return 0, err
		}
	}
	if acks < need {
		return 0, fmt.Errorf("%w: %d of %d voters answered in term %d", ErrNotConfirmed, acks, voters, term)
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	return term, nil
}

// askVoters probes peers until acks reaches need or no peer is left to ask,
// and returns acks. A peer in a later term is an error.
func (n *Node) askVoters(peers []string, term uint64, acks, need int) (int, error) {
	type answer struct {
		addr string
		term uint64
		err  error
	}
	n.probeOrder.sort(peers)
	start := time.Now()
	deadline := start.Add(n.cfg.ProbeTimeout)
	hedge := start.Add(min(n.cfg.ProbeHedge, n.cfg.ProbeTimeout))
	answers := make(chan answer, len(peers)) // late answers never block
	asked, waiting := 0, 0
	ask := func(by time.Time) {
		addr := peers[asked]
		asked++
		waiting++
		go func() {
			t, err := n.probeClient.probe(addr, by)
			answers <- answer{addr, t, err}
		}()
	}
	// First the peers a majority needs, each given until the hedge.
	for asked < len(peers) && acks+waiting < need {
		ask(hedge)
	}
	for waiting > 0 {
		a := <-answers
		waiting--
		switch {
		case a.err != nil:
			n.probeOrder.failed(a.addr)
		case a.term > term:
			return acks, fmt.Errorf("%w: a voter is in term %d, we lead term %d", ErrNotLeader, a.term, term)
		case a.term == term:
			acks++
			if acks >= need {
				return acks, nil
			}
		default: // a voter behind us: its answer proves nothing
			n.probeOrder.failed(a.addr)
		}
		// This peer did not help: ask the next, with the whole round's time.
		for asked < len(peers) && acks+waiting < need {
			ask(deadline)
		}
	}
	return acks, nil
}

// LeaderHTTPAddr returns the leader's ID and API address as the replicated
// metadata records it.
func (n *Node) LeaderHTTPAddr() (id, httpAddr string, ok bool) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", "", false
	}
	m, found := n.fsm.Member(string(lid))
	if !found || m.HTTPAddr == "" {
		return string(lid), "", false
	}
	return string(lid), m.HTTPAddr, true
}

// LeaderID returns the ID of the leader this node knows of, or "".
func (n *Node) LeaderID() string {
	_, id := n.raft.LeaderWithID()
	return string(id)
}

// Join adds a voter, or only updates its metadata when it is already a
// voter at that address (a restarted or re-registering node).
func (n *Node) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	present := false
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr):
			present = true
		case s.ID == raft.ServerID(id):
			return fmt.Errorf("%w: member %q already has raft address %s; remove it first", ErrMemberConflict, id, s.Address)
		case s.Address == raft.ServerAddress(raftAddr):
			return fmt.Errorf("%w: raft address %s already belongs to member %q", ErrMemberConflict, raftAddr, s.ID)
		}
	}
	if !present {
		// Refuse a voter this leader cannot reach on its Raft port (over
		// mutual TLS when that is on): a wrong address or a host without
		// the cluster's CA would only lower the cluster's fault tolerance.
		if _, err := n.probeClient.probe(raftAddr, time.Now().Add(n.cfg.ProbeTimeout)); err != nil {
			return fmt.Errorf("%w: raft address %s: %v", ErrMemberUnreachable, raftAddr, err)
		}
		if err := n.await(ctx, func() raft.Future {
			return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ElectionTimeout)
		}); err != nil {
			return err
		}
		n.log.Info("added voter", "id", id, "raft_addr", raftAddr)
	}
	want := fsm.Member{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr}
	if m, ok := n.fsm.Member(id); ok && m == want {
		return nil
	}
	_, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember(want)))
	return err
}

// UpdateMetadata records the addresses of a node that is already in the
// Raft configuration. Unlike Join it never adds a voter, so a node that was
// removed cannot bring itself back by re-registering.
func (n *Node) UpdateMetadata(ctx context.Context, id, raftAddr, httpAddr string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != raft.ServerID(id) {
			continue
		}
		if s.Address != raft.ServerAddress(raftAddr) {
			return fmt.Errorf("%w: member %q has raft address %s, not %s", ErrMemberConflict, id, s.Address, raftAddr)
		}
		want := fsm.Member{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr}
		if m, ok := n.fsm.Member(id); ok && m == want {
			return nil
		}
		_, err := n.Apply(ctx, fsm.EncodeSetMember(fsm.SetMember(want)))
		return err
	}
	return fmt.Errorf("%w: %q is not in the raft configuration", ErrMemberNotFound, id)
}

// Remove removes a member from the cluster. Removing the leader itself makes
// it step down once the change commits.
func (n *Node) Remove(ctx context.Context, id string) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	found := false
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			found = true
		}
	}
	if !found {
		if _, ok := n.fsm.Member(id); !ok {
			return fmt.Errorf("%w: %q", ErrMemberNotFound, id)
		}
	}
	// Metadata first: once the leader has removed itself it can no longer
	// apply anything.
	if _, err := n.Apply(ctx, fsm.EncodeRemoveMember(fsm.RemoveMember{ID: id})); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := n.await(ctx, func() raft.Future {
		return n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ElectionTimeout)
	}); err != nil {
		return err
	}
	n.log.Info("removed member", "id", id)
	return nil
}

// TransferLeadership hands leadership to another voter and waits for it.
func (n *Node) TransferLeadership(ctx context.Context) error {
	return n.await(ctx, n.raft.LeadershipTransfer)
}

// Snapshot forces a snapshot now.
func (n *Node) Snapshot(ctx context.Context) error {
	return n.await(ctx, func() raft.Future { return n.raft.Snapshot() })
}

// Status returns this node's view of the cluster.
func (n *Node) Status() (domain.ClusterStatus, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return domain.ClusterStatus{}, mapRaftError(err)
	}
	st := domain.ClusterStatus{
		Node:          n.cfg.ID,
		State:         n.raft.State().String(),
		Leader:        n.LeaderID(),
		Term:          n.raft.CurrentTerm(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		RaftTLS:       n.cfg.TLS != nil,
		Members:       []domain.Member{},
		LagEntries:    n.Lag(),
		Storage:       n.storageStatus(),
		LastContact:   n.lastContact(),
		LeaderChanges: n.leaders.list(),
	}
	for _, s := range cf.Configuration().Servers {
		m := domain.Member{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter}
		if md, ok := n.fsm.Member(string(s.ID)); ok {
			m.HTTPAddr = md.HTTPAddr
		}
		st.Members = append(st.Members, m)
	}
	return st, nil
}

// lastContact is how long ago this node last heard from a leader: 0 on the
// leader, -1 if never (raft's LastContact is updated only on followers).
func (n *Node) lastContact() time.Duration {
	if n.raft.State() == raft.Leader {
		return 0
	}
	t := n.raft.LastContact()
	if t.IsZero() {
		return -1
	}
	return time.Since(t)
}

// IsMember reports whether the Raft configuration names this node.
func (n *Node) IsMember() bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.ID) {
			return true
		}
	}
	return false
}

// CaughtUp reports whether this node knows a leader and has applied every
// entry it knows to be committed.
func (n *Node) CaughtUp() bool {
	if n.LeaderID() == "" {
		return false
	}
	return n.raft.AppliedIndex() >= n.raft.CommitIndex()
}

// Shutdown stops the node. With transfer set, a leader first hands its
// leadership to another voter so the cluster does not wait out an election.
func (n *Node) Shutdown(ctx context.Context, transfer bool) error {
	var err error
	n.shutdownOnce.Do(func() {
		if n.started.Load() == nil {
			// Opened, never started: nothing runs but the Raft port.
			close(n.shutdownCh)
			err = errors.Join(n.closeNetwork(), n.closeStore())
			return
		}
		if transfer && n.raft.State() == raft.Leader && n.voterCount() > 1 {
			if terr := n.TransferLeadership(ctx); terr != nil {
				n.log.Warn("leadership transfer on shutdown failed", "err", terr)
			} else {
				n.log.Info("leadership transferred")
			}
		}
		n.drainFutures(ctx)
		close(n.shutdownCh)
		n.raft.DeregisterObserver(n.observer)
		done := make(chan error, 1)
		go func() {
			err := n.stopRaft()
			n.wg.Wait()
			done <- err
		}()
		select {
		case err = <-done:
			err = errors.Join(err, n.closeNetwork(), n.closeStore())
		case <-ctx.Done():
			// Raft has not stopped by the deadline (a replication
			// goroutine stuck on a peer is one way: hashicorp/raft #612).
			// Cutting the network unblocks whatever waits on a peer; the
			// stores stay open while Raft may still write to them, and
			// the caller is about to exit.
			n.log.Error("raft did not shut down by the deadline; closing its network", "err", ctx.Err())
			nerr := n.closeNetwork()
			select {
			case rerr := <-done:
				err = errors.Join(rerr, nerr, n.closeStore())
			case <-time.After(time.Second):
			}
			err = errors.Join(fmt.Errorf("raft shutdown did not finish in time: %w", ctx.Err()), err)
		}
	})
	return err
}

// drainFutures stops new Raft requests and waits, while Raft still runs,
// for those in flight to be answered: committed entries reach the FSM and
// answer their callers; those that cannot commit are answered when this
// leader steps down, within its lease timeout. The wait is bounded by ctx
// and by an election and a lease timeout more than that takes, so a Raft
// that never answers cannot hold a shutdown.
func (n *Node) drainFutures(ctx context.Context) {
	n.futuresMu.Lock()
	n.closing = true
	n.futuresMu.Unlock()
	drained := make(chan struct{})
	go func() {
		n.futures.Wait()
		close(drained)
	}()
	bound := time.NewTimer(2*n.cfg.ElectionTimeout + n.cfg.LeaderLeaseTimeout)
	defer bound.Stop()
	select {
	case <-drained:
	case <-bound.C:
		n.log.Warn("shutting down with Raft requests still unanswered")
	case <-ctx.Done():
	}
}

func (n *Node) voterCount() int {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return 0
	}
	c := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			c++
		}
	}
	return c
}

// closeNetwork closes the Raft port and every connection of this node.
func (n *Node) closeNetwork() error {
	var errs []error
	if n.probeClient != nil {
		n.probeClient.closeAll()
	}
	if n.watch != nil {
		n.watch.close()
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
		// Close does not touch the pooled outgoing connections: the
		// peers' handlers of them would wait for this node forever.
		n.trans.CloseStreams()
	}
	if n.probeServer != nil {
		n.probeServer.Close()
	}
	if n.mux != nil {
		errs = append(errs, n.mux.Close())
	}
	return errors.Join(errs...)
}

func (n *Node) closeStore() error {
	if n.store != nil {
		return n.store.Close()
	}
	return nil
}

// advertiseAddr is a host:port as other nodes should dial it.
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }
