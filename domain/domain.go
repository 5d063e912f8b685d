// Package domain holds the values a ticketd node and its HTTP API exchange:
// what the node knows (sequences, Snowflake namespaces and their leases, the
// allocation audit, the cluster's status) and the few kinds of error it
// reports.
//
// It is the seam between two packages that must not know each other
// (hraftd's Store, over domain values rather than log commands): package
// server translates the state machine's and Raft's values and errors into
// these, and httpapi translates these into wire types (package api). So the
// state machine's types, which are its snapshot format, and the wire types,
// which are the API's contract, can each change without the other noticing.
// The package is values only: no behaviour, no imports beyond the standard
// library.
package domain

import "time"

// Sequence is a named sequence as the replicated state knows it.
type Sequence struct {
	Name  string
	Start int64
	Max   int64
	// Next is the lowest ID never handed to any leader; meaningless when
	// Exhausted (it would be Max+1, which may not fit an int64).
	Next      int64
	Exhausted bool
	// Remaining is how many IDs were never handed to any leader.
	Remaining int64
}

// RaiseResult is the outcome of raising a sequence's high-water mark.
type RaiseResult struct {
	// Sequence is the sequence after the raise.
	Sequence Sequence
	// Raised is false when the mark was already at or above the value.
	Raised bool
	// Skipped is how many IDs the raise passed over.
	Skipped int64
}

// SequenceSettings are what creating a sequence asks for.
type SequenceSettings struct {
	Name  string
	Start int64
	Max   int64
}

// Namespace is a Snowflake namespace: its ID layout and lease settings.
type Namespace struct {
	Name           string
	EpochMs        int64
	TimestampBits  uint8
	WorkerBits     uint8
	SequenceBits   uint8
	TickMs         int64
	MaxWorkers     int64
	LeaseTTLMs     int64
	RecycleDelayMs int64
	// EndMs is the last millisecond the layout's timestamp bits reach;
	// YearsLeft how far that is from the time the node read the namespace.
	EndMs     int64
	YearsLeft float64
	// WorkerRole is "worker" or "shard" (the worker field is a logical
	// shard, leased only by choosing it); HorizonYears how long the
	// namespace is meant to last (issue #16).
	WorkerRole   string
	HorizonYears int64
}

// NamespaceSettings are what creating a namespace asks for (the layout and
// lease settings of Namespace, defaults already filled in).
type NamespaceSettings struct {
	Name           string
	EpochMs        int64
	TimestampBits  uint8
	WorkerBits     uint8
	SequenceBits   uint8
	TickMs         int64
	MaxWorkers     int64
	LeaseTTLMs     int64
	RecycleDelayMs int64
	// WorkerRole is "" (worker ids) or "shard"; HorizonYears 0 for the
	// default.
	WorkerRole   string
	HorizonYears int64
}

// NamespaceCreated is the outcome of creating a namespace: the namespace,
// whether this request created it (false: it existed with the same
// settings), and what the node found wrong with a layout it accepted
// (its timestamp bits run out within its horizon).
type NamespaceCreated struct {
	Namespace Namespace
	Created   bool
	Warnings  []string
}

// LeaseRequest is what acquiring a worker-id lease asks for.
type LeaseRequest struct {
	Holder       string
	RequestID    string
	ClientTimeMs int64
	// Chosen asks for WorkerID and no other (a shard's id); without it the
	// lowest free worker id is granted.
	Chosen   bool
	WorkerID int64
}

// Lease is a worker id's lease in a namespace.
type Lease struct {
	Namespace        string
	WorkerID         int64
	Holder           string
	Token            uint64
	GrantedMs        int64
	ExpiresMs        int64
	ReleasedMs       int64
	State            string
	EndReason        string
	TimestampFloorMs int64
	GrantSeq         uint64
}

// LeaseGrant is a lease with the namespace it belongs to, as read from the
// state the lease's write (or read) saw.
type LeaseGrant struct {
	Lease     Lease
	Namespace Namespace
}

// AuditRecord is one grant in the allocation audit: a block of a sequence
// or a worker-id lease.
type AuditRecord struct {
	Seq            uint64
	Index          uint64
	Term           uint64
	Leader         string
	TimeMs         int64
	Kind           string
	Sequence       string
	First          int64
	Last           int64
	Namespace      string
	WorkerID       int64
	Holder         string
	Token          uint64
	PrevEndMs      int64
	PrevToken      uint64
	PrevFreedIndex uint64
	LegacyClock    bool
}

// AuditPage is a page of the audit and how many records the audit keeps.
type AuditPage struct {
	Records   []AuditRecord
	Retention int
}

// AuditCheck is the uniqueness probe's report.
type AuditCheck struct {
	Blocks     int
	Leases     int
	Violations []AuditViolation
}

// AuditViolation is one broken rule the probe found.
type AuditViolation struct {
	Kind   string
	Detail string
}

// RangeInspection says whether an ID of a sequence was ever handed to a
// leader, and which retained block holds it.
type RangeInspection struct {
	Sequence string
	ID       int64
	Issued   bool
	Block    *AuditRecord
}

// SnowflakeInspection is a Snowflake ID taken apart, with the holder of its
// worker id at its time if the audit knows it.
type SnowflakeInspection struct {
	Namespace string
	ID        int64
	TimeMs    int64
	WorkerID  int64
	Sequence  int64
	Holder    string
	Found     bool
	// WorkerRole is the namespace's: for "shard", WorkerID is the shard.
	WorkerRole string
}

// Member is a node of the cluster and the addresses it is reached at.
type Member struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	Voter    bool
	// Version, FeatureLevel and LevelReport are what this node's level
	// probe last learned of the member (api.Member says how to read them).
	Version      string
	FeatureLevel int
	LevelReport  string
}

// ClusterStatus is one node's view of the cluster.
type ClusterStatus struct {
	Node         string
	State        string
	Leader       string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// RaftTLS says whether this node's Raft traffic is encrypted and
	// mutually authenticated.
	RaftTLS bool
	Members []Member
	// NotReady is why this node's /readyz fails ("" when it is ready).
	NotReady string
	// LagEntries is how many committed entries this node has yet to
	// apply.
	LagEntries uint64
	Storage    Storage
	// LastContact is how long ago this node last heard from the leader: 0
	// on the leader itself, -1 when it never has.
	LastContact time.Duration
	// LeaderChanges are the leadership changes this node has seen, newest
	// first (a bounded few).
	LeaderChanges []LeaderChange
	// Version is this node's release, FeatureLevel the highest feature
	// level its binary knows, and ClusterFeatureLevel the level its FSM
	// has applied from the log (what the cluster may use).
	Version             string
	FeatureLevel        int
	ClusterFeatureLevel int
	// Feature describes FeatureLevel for people (fsm.LevelInfo of it):
	// the HTTP layer shows it and does not know the log's types.
	Feature FeatureLevel
	// Snowflake is this node's worker-id lease in each namespace its
	// Snowflake service has served or was told to serve, by name.
	Snowflake []NodeSnowflake
	// Standby is the cluster's disaster-recovery standby, nil when none
	// is recorded; Fence is set when this cluster's standby answered that
	// it was promoted (this cluster then serves nothing); Promotions are
	// the promotions this data went through (issue #34).
	Standby    *StandbyStatus
	Fence      *Fence
	Promotions []Promotion
	// ThisNodeStandby says whether this node is the recorded standby.
	ThisNodeStandby bool
}

// StandbyStatus is the recorded standby and, on the leader, what the
// leader sees of its replication.
type StandbyStatus struct {
	ID string
	// State is catching-up, in-sync or out-of-sync, as the log records it.
	State string
	// Bound is the IDs per sequence the leader may serve past what the
	// standby has stored; Timeout how long the standby may make no
	// progress before the leader records it out of sync.
	Bound   int64
	Timeout time.Duration
	// SinceIndex is the entry that recorded State; Since its leader's
	// stamp (zero when not recorded); Reason why (out of sync).
	SinceIndex     uint64
	Since          time.Time
	Reason         string
	OutOfSyncCount int64
	// Seen is set on the leader: what it saw of the standby in this
	// stretch of leadership.
	Seen *StandbySeen
	// Certificate is set on the standby itself when it holds one: the
	// in-sync record its leader certified, and until when (its trust
	// horizon before the clock skew; cluster/standbycert.go).
	Certificate *StandbyCertificate
}

// StandbyCertificate is the certificate a standby holds.
type StandbyCertificate struct {
	InSyncIndex uint64
	ValidUntil  time.Time
	Leader      string
	Term        uint64
}

// StandbySeen is the leader's view of its standby's replication.
type StandbySeen struct {
	// AckIndex is the highest log index the standby acknowledged storing;
	// LagEntries the leader's last index less it.
	AckIndex   uint64
	LagEntries uint64
	// LastContact is how long ago the standby last answered; LastProgress
	// how long ago it last acknowledged storing entries (or that it held
	// every entry): -1 when never in this stretch of leadership.
	LastContact  time.Duration
	LastProgress time.Duration
	// Promoted is the standby's answer when it says it was promoted.
	Promoted string
	// CertifiedUntil is the latest V of a certificate the standby said it
	// stored in this stretch (zero: none yet).
	CertifiedUntil time.Time
}

// Fence records that this cluster's standby was promoted.
type Fence struct {
	Standby string
	Index   uint64
	At      time.Time
	Reason  string
}

// Promotion records a promotion of this data from a standby.
type Promotion struct {
	Standby    string
	AtIndex    uint64
	Advance    int64
	State      string
	TokenFloor uint64
	At         time.Time
}

// SnowflakeIDs are IDs made by this node's own Snowflake generator of the
// namespace, under its lease of WorkerID; they strictly increase.
type SnowflakeIDs struct {
	Namespace string
	Node      string
	WorkerID  int64
	// LeaseGrantSeq is the grant_seq of the lease the IDs were made under
	// (0: not one lease, or not named).
	LeaseGrantSeq uint64
	IDs           []int64
}

// NodeSnowflake is this node's worker-id lease in one namespace
// (api.NodeSnowflake says how to read it).
type NodeSnowflake struct {
	Namespace        string
	Serving          bool
	Reason           string
	WorkerID         int64
	LeaseRemaining   time.Duration
	TimestampFloorMs int64
	Issued           int64
}

// FeatureLevel describes a feature level: the highest log entry type and
// snapshot format a binary of that level knows (api.FeatureLevel's fields).
type FeatureLevel struct {
	Level          int
	MaxEntryType   int
	SnapshotFormat int
}

// LeaderChange is one leadership change a node saw: from Term on, Leader
// led ("" when the node knew no leader). At is the node's wall clock, for
// people to read; nothing decides by it.
type LeaderChange struct {
	Term   uint64
	Leader string
	At     time.Time
}

// Storage is the state of a node's data directory: whether its latest write
// to the Raft log succeeded and, while writes fail, how and since how long;
// and the sizes (-1 where unknown).
type Storage struct {
	Healthy                            bool
	ErrorKind, Error                   string
	FailingFor                         time.Duration
	FreeBytes, LogBytes, SnapshotBytes int64
}
