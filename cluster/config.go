package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// Peer is one entry of a static initial cluster.
type Peer struct {
	ID       string
	RaftAddr string
}

// ParseInitialCluster parses "id=host:port,id=host:port,...".
func ParseInitialCluster(s string) ([]Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []Peer
	seenID := map[string]bool{}
	seenAddr := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("initial cluster entry %q: want id=host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("initial cluster entry %q: %v", part, err)
		}
		if seenID[id] {
			return nil, fmt.Errorf("initial cluster names id %q twice", id)
		}
		if seenAddr[addr] {
			return nil, fmt.Errorf("initial cluster names address %q twice", addr)
		}
		seenID[id], seenAddr[addr] = true, true
		peers = append(peers, Peer{ID: id, RaftAddr: addr})
	}
	return peers, nil
}

// Config configures one node.
type Config struct {
	// ID is this node's Raft server ID; it must stay the same across
	// restarts, since Raft's configuration names nodes by it.
	ID string
	// DataDir holds the Raft log, stable store and snapshots.
	DataDir string
	// RaftAddr is the address the Raft port binds to.
	RaftAddr string
	// RaftAdvertise is the address other nodes dial; RaftAddr if empty.
	RaftAdvertise string
	// HTTPAdvertise is this node's API address (host:port) as other nodes
	// should reach it; the node records it in the replicated member
	// metadata so that followers can forward to the leader.
	HTTPAdvertise string

	// Bootstrap starts a new single-node cluster when DataDir is empty.
	Bootstrap bool
	// InitialCluster bootstraps a new cluster of these voters when DataDir
	// is empty; every node of the new cluster gets the identical list. A
	// node it does not name bootstraps nothing and must have WillJoin: the
	// list then names the seeds of a cluster this node joins, as every pod
	// of a StatefulSet gets the same seeds whatever its ordinal.
	InitialCluster []Peer
	// WillJoin says that this node, when it is in no configuration, asks an
	// existing cluster to add it (server.Start sets it from its Join).
	WillJoin bool

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// SnapshotThreshold is how many entries since the last snapshot
	// trigger a new one; SnapshotInterval how often that is checked.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so a
	// briefly lagging follower catches up from the log, not a snapshot.
	TrailingLogs uint64
	// SnapshotRetain is how many snapshots stay on disk.
	SnapshotRetain int

	// ProbeTimeout bounds one leadership-confirmation round.
	ProbeTimeout time.Duration
	// ProbeHedge is how long a round waits for the voters it asked first
	// before it asks the others (see Node.probeRound): what a silently
	// partitioned voter costs the first round that meets it.
	ProbeHedge time.Duration

	// LeaseReads lets the leader answer leadership checks from a lease
	// (lease.go) rather than a quorum round per batch of requests. It
	// assumes node clocks' rates differ by at most LeaseMaxDrift; off by
	// default (README, Guarantees). Every node answers lease probes
	// whatever it says: it decides only whether this node, as leader,
	// asks for promises.
	LeaseReads bool
	// LeaseDuration is how long a voter promises not to vote after it
	// answers a lease probe: zero means ElectionTimeout. A crashed leader
	// costs up to this much more unavailability, and a restarted voter
	// that promised sits out elections this long.
	LeaseDuration time.Duration
	// LeaseMaxDrift is ε: a lease ends at start + LeaseDuration·(1−ε) on
	// the leader's clock, safe while no voter's clock runs more than
	// 1/(1−ε) times as fast as the leader's.
	LeaseMaxDrift float64

	// Version is this node's release (buildinfo.Version), reported with
	// its feature level to the leader's level probe.
	Version string
	// FeatureLevel is the feature level this node reports: fsm.CurrentLevel
	// when 0. Set lower, the node holds the cluster below the levels it
	// knows, as a binary of that release would; the in-process tests use
	// it to stand for an older member. It cannot exceed fsm.CurrentLevel.
	FeatureLevel fsm.FeatureLevel
	// LevelProbeInterval is how often the leader asks every member for
	// its release and feature level, and raises the cluster's level when
	// all know a higher one.
	LevelProbeInterval time.Duration
	// HoldStandbyOutOfSync keeps a standby recorded out of sync from being
	// recorded in sync again. A seam for tests that need a standby whose
	// own log ends on the out-of-sync record; never set in production.
	HoldStandbyOutOfSync bool

	// MaxRPCsInFlight is hashicorp/raft's pipelining setting: 1 sends one
	// AppendEntries at a time to each follower; 2 or more pipelines them
	// (see DESIGN.md, "Pipelined replication", for why the default is 1).
	MaxRPCsInFlight int

	// Listener, if set, is used for the Raft port instead of listening on
	// RaftAddr (tests pass a listener on 127.0.0.1:0).
	Listener net.Listener
	// Dial, if set, opens connections to other nodes' Raft ports (tests
	// use it to cut links; TLS would wrap it). Default: plain TCP.
	Dial DialFunc

	// faultConfig holds the planted bug of the fault-injection build
	// (faults.go, built with the ticketd_faults tag) and nothing in any
	// other build (nofaults.go).
	faultConfig

	// TLS, if set, puts mutual TLS on the Raft port.
	TLS *RaftTLS

	// Metrics, if set, receives the node's metrics.
	Metrics *metrics.Metrics

	// WallClock reads this node's wall clock for the stamps it writes into
	// entries (audit and inspection times, never a decision); nil is
	// time.Now. Tests and the fault suite's clock nemesis offset it.
	WallClock func() time.Time

	Logger *slog.Logger
	// RaftLogLevel is the level of hashicorp/raft's own log lines
	// (its default, DEBUG, is far too loud).
	RaftLogLevel slog.Level
}

// seed reports whether InitialCluster names this node: one of the voters
// that bootstrap the cluster on empty data dirs.
func (c Config) seed() bool {
	for _, p := range c.InitialCluster {
		if p.ID == c.ID {
			return true
		}
	}
	return false
}

// DefaultConfig returns production timings. Heartbeat and election timeouts
// are half of hashicorp/raft's defaults: a failover costs about one to two
// election timeouts of unavailability, and on a LAN 500 ms is still tens of
// round trips. Raise them (for example with a WAN or a heavily loaded host).
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		SnapshotThreshold:  8192,
		SnapshotInterval:   120 * time.Second,
		TrailingLogs:       10240,
		SnapshotRetain:     2,
		ProbeTimeout:       500 * time.Millisecond,
		ProbeHedge:         25 * time.Millisecond,
		LevelProbeInterval: 2 * time.Second,
		LeaseMaxDrift:      0.1,
		MaxRPCsInFlight:    1,
		RaftLogLevel:       slog.LevelWarn,
	}
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("node id is empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is empty"))
	}
	if c.Listener == nil && c.RaftAddr == "" {
		errs = append(errs, errors.New("raft address is empty"))
	}
	if c.HTTPAdvertise == "" {
		errs = append(errs, errors.New("HTTP advertise address is empty"))
	}
	if c.Bootstrap && len(c.InitialCluster) > 0 {
		errs = append(errs, errors.New("bootstrap and initial cluster are exclusive: bootstrap starts a single-node cluster"))
	}
	if len(c.InitialCluster) > 0 && !c.seed() && !c.WillJoin {
		// Without a join the node would wait, forever, for someone to
		// add it: most likely its id or the list is mistyped.
		errs = append(errs, fmt.Errorf("initial cluster does not name this node's id %q, and no join address is given: "+
			"add %s=<raft host:port> to --initial-cluster if this node is one of those that start the cluster, "+
			"or give --join with the API URLs of its members to join the cluster they start", c.ID, c.ID))
	}
	if c.HeartbeatTimeout <= 0 || c.ElectionTimeout <= 0 || c.LeaderLeaseTimeout <= 0 || c.CommitTimeout <= 0 {
		errs = append(errs, errors.New("raft timeouts must be positive"))
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		errs = append(errs, errors.New("leader lease timeout must not exceed the heartbeat timeout"))
	}
	if c.ProbeTimeout <= 0 || c.ProbeHedge <= 0 || c.ProbeHedge > c.ProbeTimeout {
		errs = append(errs, fmt.Errorf("probe timing: want 0 < hedge (%v) <= timeout (%v)", c.ProbeHedge, c.ProbeTimeout))
	}
	if c.LeaseDuration < 0 || c.LeaseDuration > maxLeaseDuration {
		errs = append(errs, fmt.Errorf("lease duration %v: want at most %v (0 means the election timeout)", c.LeaseDuration, maxLeaseDuration))
	}
	if c.LeaseReads && (c.LeaseMaxDrift <= 0 || c.LeaseMaxDrift >= 0.5) {
		errs = append(errs, fmt.Errorf("lease max drift %v: want 0 < drift < 0.5 (0.1 allows a voter's clock to run 11%% fast against the leader's)", c.LeaseMaxDrift))
	}
	if c.FeatureLevel > fsm.CurrentLevel {
		errs = append(errs, fmt.Errorf("feature level %d is above what this binary knows (%d)", c.FeatureLevel, fsm.CurrentLevel))
	}
	if c.LevelProbeInterval <= 0 {
		errs = append(errs, errors.New("level probe interval must be positive"))
	}
	if c.MaxRPCsInFlight < 1 {
		errs = append(errs, errors.New("max RPCs in flight must be at least 1 (1 turns pipelining off)"))
	}
	if c.TLS != nil {
		if err := c.TLS.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.SnapshotRetain < 1 {
		errs = append(errs, errors.New("snapshot retain must be at least 1"))
	}
	return errors.Join(errs...)
}
