// Package cluster owns hashicorp/raft for one ticketd node: its stores and
// transport, bootstrap, membership, the leader loop (a Barrier before a new
// leader serves), and the quorum check that makes ranges served from memory
// linearizable. DESIGN.md says why each piece is the way it is.
package cluster

import (
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

	"github.com/ticketd/ticketd/fsm"
)

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

	// Leader leases (lease.go, promise.go): the lease this node holds as
	// leader, the promises it made as a voter, the client that asks voters
	// for theirs, and the lease service's connections.
	leaseState  leaseState
	promises    *promises
	leaseClient *probeClient
	leaseConns  connSet

	// levels is what the leader's level probe last learned of each
	// member; levelMu orders a level raise against a join (levels.go).
	levels  memberLevels
	levelMu sync.Mutex

	// seen is what this leader saw of each peer's replication in its
	// current stretch: the standby's bound and state rest on it
	// (standby.go).
	seen replicationSeen
	// fencedTerm is the last term in which this node found itself leader
	// of a fenced cluster (logged once per term).
	fencedTerm atomic.Uint64
	// promoted is set when this node's data was promoted from a standby:
	// it then refuses its old cluster's Raft traffic (refuseOldCluster).
	promoted atomic.Bool
	// ready is closed once Start has read the restored state: the
	// transport hands Raft no RPC before (refuseOldCluster).
	ready chan struct{}
	// fresh marks a data directory that started empty (standby.go).
	fresh freshStart
	// certs holds, on the standby, the latest certificate of its trust
	// horizon; certConns are the leaders' connections that carry them
	// (standbycert.go).
	certs     certStore
	certConns connSet

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
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = cfg.ElectionTimeout
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
		ready:          make(chan struct{}),
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
	if err := n.fresh.open(cfg.DataDir, existing); err != nil {
		return nil, err
	}
	if err := n.certs.open(cfg.DataDir); err != nil {
		return nil, err
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
	// NewRaft restored the latest snapshot, where a promotion is recorded
	// (it is never an entry).
	n.promoted.Store(len(n.fsm.Promotions()) > 0)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.stopRaft = func() error { return r.Shutdown().Error() }
	n.started.Store(r)
	close(n.ready)
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
	if err := ensureNodeID(n.cfg.DataDir, n.cfg.ID); err != nil {
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
	currentTerm := func() uint64 {
		if r := n.started.Load(); r != nil {
			return r.CurrentTerm()
		}
		return 0
	}
	// A probe can arrive before Raft has started; term 0 counts for no
	// one.
	n.probeServer = newProbeServer(currentTerm)
	dial := cfg.Dial
	if dial == nil {
		dial = defaultDial
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS.Server)
		dial = tlsDial(dial, cfg.TLS.Client)
	}
	p, err := newPromises(cfg.DataDir, currentTerm, cfg.leaseForgetPromise())
	if err != nil {
		_ = ln.Close()
		return err
	}
	p.onMarker = func(err error) {
		n.log.Error("cannot record a lease promise on disk: promising nothing", "err", err, "data_dir", cfg.DataDir)
	}
	if !p.quarantineUntil.IsZero() {
		n.log.Info("this node promised leader leases before it stopped: it sits out elections until they have lapsed", "for", p.marker)
	}
	n.promises = p
	n.leaseState.base = bootClock()
	services := muxServices{probe: n.probeServer.serve, lease: n.serveLease, level: n.serveLevel, cert: n.serveCert}
	if n.ownLevel() < fsm.LevelLeases {
		// A node held to an older level (Config.FeatureLevel) answers as
		// the binaries of that level do: they drop the lease byte.
		services.lease = nil
	}
	n.mux = newMux(ln, advertise, dial, n.log, services)
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
	n.watch.seen = &n.seen
	n.watch.noPipeline = func() bool { _, ok := n.fsm.StandbyInfo(); return ok }
	n.watch.refuse = n.refuseOldCluster
	n.watch.onCommit = n.fresh.sawCommit
	n.watch.promises = n.promises
	n.watch.beforeTimeoutNow = n.releaseForTransfer
	n.watch.onConfigEntry = n.dropLease
	n.watch.localID, n.watch.localAddr, n.watch.log = cfg.ID, advertise.String(), n.log
	n.probeClient = newProbeClient(n.mux.dial, muxProbe)
	n.leaseClient = newProbeClient(n.mux.dial, muxLease)
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
	case len(n.cfg.InitialCluster) > 0 && !n.cfg.seed():
		// Not a seed (Validate lets it through only with WillJoin): the
		// seeds bootstrap, and this node is added to what they start.
		n.log.Info("not in the initial cluster: bootstrapping nothing, joining the cluster its seeds start", "seeds", len(n.cfg.InitialCluster))
		return nil
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

// Configuration returns the servers of the latest Raft configuration this
// node holds (none before it bootstraps or is added): its own copy, which a
// removal the node never received leaves behind.
func (n *Node) Configuration() ([]Peer, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftError(err)
	}
	var out []Peer
	for _, s := range cf.Configuration().Servers {
		out = append(out, Peer{ID: string(s.ID), RaftAddr: string(s.Address)})
	}
	return out, nil
}

// ID returns this node's ID.
func (n *Node) ID() string { return n.cfg.ID }

// RaftAddr returns the Raft address other nodes reach this node at.
func (n *Node) RaftAddr() string { return n.mux.advertise.String() }

// FSM returns the node's state machine, for reads.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Sequence returns the local FSM's view of a sequence.
func (n *Node) Sequence(name string) (fsm.Sequence, bool) { return n.fsm.Sequence(name) }

// advertiseAddr is a host:port as other nodes should dial it.
type advertiseAddr string

func (a advertiseAddr) Network() string { return "tcp" }
func (a advertiseAddr) String() string  { return string(a) }
