// Package api holds the wire types of ticketd's HTTP API and the checks that
// both the server and its clients make before a request is proposed: sequence
// names and count limits. They may change between releases; the state
// machine applies its own copy of the rules, frozen with the log format
// (fsm/rules.go), and a test holds these to never accepting what it refuses.
//
// It imports nothing but the standard library so that the client SDK can share
// these types without importing anything of the server.
package api

import (
	"fmt"
	"math"
	"time"
)

// LeaderHeader is set on every answer a node forwarded to the leader: the
// leader's API address (host:port) as the cluster records it. A client that
// has that address among its endpoints can go there directly and save the
// hop; one that has not ignores it.
const LeaderHeader = "X-Ticketd-Leader"

// ForwardedHeader marks a request one node forwarded to the leader (from its
// HTTP API or its Redis-protocol front); the leader never forwards it again,
// so a stale view cannot bounce a request around.
const ForwardedHeader = "X-Ticketd-Forwarded-By"

const (
	// MaxSequenceNameLen is the longest sequence name accepted.
	MaxSequenceNameLen = 64

	// DefaultSequencePage is how many sequences GET /v1/sequences lists
	// without "limit"; MaxSequencePage is the largest "limit" it accepts. A
	// full page of the longest names and largest numbers is under 1 MB
	// (about 190 bytes a sequence), the most the Go SDK reads of an answer.
	DefaultSequencePage = 1000
	MaxSequencePage     = 5000

	// MaxReserveCount is the largest count one reservation may ask for.
	MaxReserveCount int64 = 10_000_000

	// MaxBodyBytes is the largest request body the HTTP API reads; a larger
	// body is refused with 413.
	MaxBodyBytes = 64 << 10

	// DefaultStart is the first ID of a sequence created without "start".
	DefaultStart int64 = 1

	// DefaultMax is the largest ID of a sequence created without "max".
	DefaultMax int64 = math.MaxInt64
)

// ValidateSequenceName reports whether name follows the one naming rule:
// 1 to 64 characters, each an ASCII letter, digit, '.', '_' or '-'.
func ValidateSequenceName(name string) error {
	if name == "" {
		return fmt.Errorf("sequence name is empty; use 1 to %d of [A-Za-z0-9._-]", MaxSequenceNameLen)
	}
	if len(name) > MaxSequenceNameLen {
		return fmt.Errorf("sequence name is %d characters long; at most %d are allowed", len(name), MaxSequenceNameLen)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return fmt.Errorf("sequence name has %q at byte %d; only [A-Za-z0-9._-] are allowed", r, i)
		}
	}
	return nil
}

// ValidateNewSequenceName is the naming rule of a sequence or namespace
// being created: ValidateSequenceName's, less the names "." and "..". Those
// are dot segments: curl, browsers and many proxies resolve them away before
// a request leaves (PUT /v1/sequences/./ranges arrives as
// /v1/sequences/ranges), so a sequence of that name could be created by one
// client and not reached by the next. Names that only contain dots ("...",
// "a.b", ".x") are plain segments and stay valid.
//
// Only creation applies this rule. A sequence or namespace named "." or ".."
// created by an earlier release keeps working: every other request checks
// ValidateSequenceName, which accepts it, and reaches it as %2E or %2E%2E
// (the Go SDK writes it so). The state machine's own rule (fsm/rules.go) is
// frozen with the log format and still applies such names, so logs,
// snapshots and backups that hold them keep applying.
func ValidateNewSequenceName(name string) error {
	if err := ValidateSequenceName(name); err != nil {
		return err
	}
	if IsDotSegment(name) {
		resolved := "/v1/sequences/ranges"
		if name == ".." {
			resolved = "/v1/ranges"
		}
		return fmt.Errorf("name %q is a dot segment, which URLs and proxies rewrite (curl sends /v1/sequences/%s/ranges as %s); choose another name. One named so by an earlier release keeps working: reach it as %s", name, name, resolved, PathSegment(name))
	}
	return nil
}

// IsDotSegment reports whether name is "." or "..", a path segment that URL
// normalisation resolves away (RFC 3986, section 5.2.4).
func IsDotSegment(name string) bool { return name == "." || name == ".." }

// PathSegment is name as it goes into a URL path: as it is, except the dot
// segments "." and "..", which go percent-encoded as "%2E" and "%2E%2E" so
// that no client or proxy resolves them away. Every other valid name is made
// of unreserved characters only and needs no escaping.
func PathSegment(name string) string {
	switch name {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return name
}

// ValidateCount reports whether count is an acceptable reservation size.
func ValidateCount(count int64) error {
	if count < 1 || count > MaxReserveCount {
		return fmt.Errorf("count must be between 1 and %d, got %d", MaxReserveCount, count)
	}
	return nil
}

// ValidateBounds reports whether start and max describe a usable sequence.
func ValidateBounds(start, max int64) error {
	if start < 1 {
		return fmt.Errorf("start must be at least 1, got %d", start)
	}
	if max < start {
		return fmt.Errorf("max (%d) must be at least start (%d)", max, start)
	}
	return nil
}

// CreateSequenceRequest is the optional body of PUT /v1/sequences/{name}.
// A nil field takes its default (DefaultStart, DefaultMax).
type CreateSequenceRequest struct {
	Start *int64 `json:"start,omitempty"`
	Max   *int64 `json:"max,omitempty"`
}

// RaiseSequenceRequest is the body of POST /v1/sequences/{name}/raise.
type RaiseSequenceRequest struct {
	// AtLeast is the high-water mark the sequence must have afterwards:
	// every ID handed out once the call has returned is above it. A mark
	// already at or above it is left as it is; a raise never lowers one.
	AtLeast int64 `json:"at_least"`
}

// RaiseSequenceResult answers POST /v1/sequences/{name}/raise.
type RaiseSequenceResult struct {
	// Raised is false when the high-water mark was already at or above
	// at_least (nothing changed).
	Raised bool `json:"raised"`
	// Skipped is how many IDs the raise passed over: never handed out, and
	// never to be (0 when nothing changed).
	Skipped int64 `json:"skipped"`
	// Sequence is the sequence after the raise.
	Sequence Sequence `json:"sequence"`
}

// Sequence describes a sequence as GET /v1/sequences/{name} returns it.
type Sequence struct {
	Name string `json:"name"`
	// Next is the lowest ID never handed to any leader; nil once the
	// sequence is exhausted (every ID up to Max was handed out).
	Next *int64 `json:"next"`
	// Start is the first ID the sequence was created with.
	Start int64 `json:"start"`
	Max   int64 `json:"max"`
	// Remaining is how many IDs were never handed to any leader. The
	// leader may still hold IDs of its current block in memory, so a
	// reservation can succeed while Remaining is 0; and IDs a former leader
	// held are gaps, never handed out.
	Remaining int64 `json:"remaining"`
}

// SequenceList is the body of GET /v1/sequences?after=NAME&limit=L: up to L
// sequences whose names are strictly greater than NAME, in byte order of
// names.
type SequenceList struct {
	Sequences []Sequence `json:"sequences"`
	// Next is the name to pass as "after" for the next page: the last name
	// of this page, present only when more sequences follow it. Sequences
	// created meanwhile appear on later pages if and only if their names
	// come after the cursor.
	Next string `json:"next,omitempty"`
}

// ReserveRequest is the body of POST /v1/sequences/{name}/ranges.
type ReserveRequest struct {
	Count int64 `json:"count"`
}

// Range is an inclusive range of IDs reserved from a sequence:
// Last-First+1 IDs, each handed out exactly once.
type Range struct {
	Sequence string `json:"sequence"`
	First    int64  `json:"first"`
	Last     int64  `json:"last"`
}

// Member is one node of the cluster.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Voter    bool   `json:"voter"`
	// Version and FeatureLevel are what the member last reported to the
	// answering node's level probe (only the leader probes every member:
	// on a follower they are absent; each node's own are in its
	// ClusterStatus, which GET /v1/cluster/nodes gathers). A member
	// whose binary predates feature levels reports nothing: Reported is
	// false once it answered without a level, and it counts as
	// BaseFeatureLevel. Both empty while its report is not known.
	Version      string `json:"version,omitempty"`
	FeatureLevel int    `json:"feature_level,omitempty"`
	// LevelReport says what the probe learned: "reported", "no-report"
	// (an older binary: counts as BaseFeatureLevel), "unreachable", or ""
	// when this node has not probed it.
	LevelReport string `json:"level_report,omitempty"`
}

// LeaderTransferRequest is the body of POST /v1/cluster/leader.
type LeaderTransferRequest struct {
	// To is the ID of the voter that should lead.
	To string `json:"to"`
}

// LeaderTransfer is what POST /v1/cluster/leader answers once the transfer
// has finished.
type LeaderTransfer struct {
	// Leader is the node that leads now: the one asked for.
	Leader string `json:"leader"`
	// From is the node that led when the request arrived.
	From string `json:"from"`
	// Transferred is false when From already was the node asked for:
	// nothing moved, and the answer is still 200, so that a retried
	// request finds its work done.
	Transferred bool `json:"transferred"`
}

// JoinRequest is the body of POST /v1/cluster/members.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
	// FeatureLevel is the highest feature level the joining node's binary
	// knows, and Version its release. A request without one comes from a
	// binary older than feature levels: it counts as BaseFeatureLevel, and
	// the leader refuses it once the cluster's level is above that.
	FeatureLevel int    `json:"feature_level,omitempty"`
	Version      string `json:"version,omitempty"`
	// Standby asks to join as the cluster's disaster-recovery standby (a
	// non-voting member; see StandbyStatus), with its bound in IDs per
	// sequence (0: 10,000,000, the largest reservation) and the time it
	// may make no progress before it is recorded out of sync (0: 10 s).
	Standby          bool  `json:"standby,omitempty"`
	StandbyBound     int64 `json:"standby_bound,omitempty"`
	StandbyTimeoutMs int64 `json:"standby_timeout_ms,omitempty"`
}

// BaseFeatureLevel is the level a node counts as when it reports none: a
// binary from before feature levels existed. Level 1 is what ticketd knew
// before grouped blocks (log entry types up to 10, snapshot format 4).
const BaseFeatureLevel = 1

// ClusterStatus is the body of GET /v1/cluster: the answering node's view.
type ClusterStatus struct {
	// Node is the ID of the node that answered.
	Node         string `json:"node"`
	State        string `json:"state"`
	Leader       string `json:"leader"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// RaftTLS says whether this node's Raft traffic (log replication,
	// votes, leadership probes) is encrypted and mutually authenticated;
	// APITLS whether the request was answered over HTTPS.
	RaftTLS bool     `json:"raft_tls"`
	APITLS  bool     `json:"api_tls"`
	Members []Member `json:"members"`
	// Ready is what this node's /readyz answers; NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// LagEntries is how many committed entries this node has yet to
	// apply (the highest commit index a leader has sent it, less its
	// applied index).
	LagEntries uint64 `json:"lag_entries"`
	// Storage is the state of this node's data directory.
	Storage NodeStorage `json:"storage"`
	// LastContactMs is how long ago this node last heard from the leader,
	// in milliseconds: 0 on the leader, -1 when it never has.
	LastContactMs int64 `json:"last_contact_ms"`
	// LeaderChanges are the leadership changes this node has seen, newest
	// first (at most 20; kept in memory, so they start again at a restart).
	LeaderChanges []LeaderChange `json:"leader_changes"`
	// Version is the answering node's release (git describe of its build),
	// FeatureLevel the highest feature level its binary knows (see
	// Feature), and ClusterFeatureLevel the level the cluster has decided
	// through its log: what every node may use. An older binary answers
	// with none of these.
	Version             string        `json:"version,omitempty"`
	FeatureLevel        int           `json:"feature_level,omitempty"`
	Feature             *FeatureLevel `json:"feature,omitempty"`
	ClusterFeatureLevel int           `json:"cluster_feature_level,omitempty"`
	// Snowflake is the answering node's worker-id lease in each namespace
	// its Snowflake service has served (POST /v1/namespaces/{name}/ids)
	// or was started to serve (--snowflake-namespaces), by name.
	Snowflake []NodeSnowflake `json:"snowflake,omitempty"`
	// Standby is the cluster's disaster-recovery standby as the log
	// records it (absent when none), with, on the leader, what the leader
	// sees of its replication; ThisNodeStandby says whether the answering
	// node is it. Fence is set when this cluster's standby answered that
	// it was promoted: the cluster then serves nothing. Promotions are
	// the promotions this data went through (issue #34).
	Standby         *StandbyStatus `json:"standby,omitempty"`
	ThisNodeStandby bool           `json:"this_node_standby,omitempty"`
	Fence           *Fence         `json:"fence,omitempty"`
	Promotions      []Promotion    `json:"promotions,omitempty"`
}

// Defaults of a standby's settings (JoinRequest).
const (
	DefaultStandbyBound     int64 = MaxReserveCount
	DefaultStandbyTimeoutMs int64 = 10_000
)

// Standby states.
const (
	StandbyCatchingUp = "catching-up"
	StandbyInSync     = "in-sync"
	StandbyOutOfSync  = "out-of-sync"
)

// StandbyStatus is the disaster-recovery standby. While it is in sync the
// leader serves no ID of a sequence more than Bound past the high-water
// mark the standby has stored, and answers no lease write it has not
// stored; after TimeoutMs without progress the leader records it out of
// sync and goes on without it, and records it in sync again once it has
// caught up.
type StandbyStatus struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Bound     int64  `json:"bound"`
	TimeoutMs int64  `json:"timeout_ms"`
	// SinceIndex is the log entry that recorded State, Since its leader's
	// clock (RFC 3339, for people), Reason why it fell out of sync.
	SinceIndex     uint64 `json:"since_index"`
	Since          string `json:"since,omitempty"`
	Reason         string `json:"reason,omitempty"`
	OutOfSyncCount int64  `json:"out_of_sync_count,omitempty"`
	// Seen is present on the leader only.
	Seen *StandbySeen `json:"seen,omitempty"`
	// Certificate is present on the standby itself once it holds one.
	Certificate *StandbyCertificate `json:"certificate,omitempty"`
}

// StandbyCertificate is the latest certificate the standby holds: its
// leader will not record it out of sync before ValidUntil (RFC 3339, the
// leader's clock), given the in-sync record at InSyncIndex. A promotion
// trusts that record only if the primary was lost before ValidUntil less
// the clock skew.
type StandbyCertificate struct {
	InSyncIndex uint64 `json:"in_sync_index"`
	ValidUntil  string `json:"valid_until"`
	Leader      string `json:"leader"`
	Term        uint64 `json:"term"`
}

// StandbySeen is what the leader sees of its standby's replication in its
// current term: the highest index the standby acknowledged storing, how
// many entries it lags, and how long ago it last answered and last showed
// progress (-1: not in this term).
type StandbySeen struct {
	AckIndex       uint64 `json:"ack_index"`
	LagEntries     uint64 `json:"lag_entries"`
	LastContactMs  int64  `json:"last_contact_ms"`
	LastProgressMs int64  `json:"last_progress_ms"`
	Promoted       string `json:"promoted,omitempty"`
	// CertifiedUntil is the latest time of a certificate the standby
	// said it stored in this term (RFC 3339; absent when none yet).
	CertifiedUntil string `json:"certified_until,omitempty"`
}

// Fence records that this cluster's standby answered that it was promoted.
type Fence struct {
	Standby string `json:"standby"`
	Index   uint64 `json:"index"`
	At      string `json:"at,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Promotion is a promotion of this data from a standby (ticketd promote):
// every sequence was advanced by Advance, the lease fencing floor raised to
// TokenFloor.
type Promotion struct {
	Standby    string `json:"standby"`
	AtIndex    uint64 `json:"at_index"`
	Advance    int64  `json:"advance"`
	State      string `json:"state"`
	TokenFloor uint64 `json:"token_floor"`
	At         string `json:"at,omitempty"`
}

// FeatureLevel describes a feature level: the highest log entry type and
// snapshot format a binary of that level knows.
type FeatureLevel struct {
	Level          int `json:"level"`
	MaxEntryType   int `json:"max_entry_type"`
	SnapshotFormat int `json:"snapshot_format"`
}

// LeaderChange is one leadership change a node saw: from Term on, Leader
// led ("" when the node knew no leader). At is the node's wall clock
// (RFC 3339), for people to read: nothing in ticketd decides by it.
type LeaderChange struct {
	Term   uint64    `json:"term"`
	Leader string    `json:"leader"`
	At     time.Time `json:"at"`
}

// NodesStatus is the body of GET /v1/cluster/nodes: every member's own
// answer to GET /v1/cluster, gathered by the node asked, so that one
// request (the status page's) shows the whole cluster, and a node that does
// not answer shows as such.
type NodesStatus struct {
	// Node is the ID of the node that gathered the answers.
	Node  string       `json:"node"`
	Nodes []NodeStatus `json:"nodes"`
}

// NodeStatus is one member as the gathering node reached it: its status
// when it answered, otherwise why not.
type NodeStatus struct {
	ID       string `json:"id"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Voter    bool   `json:"voter"`
	// Reachable is true when the member answered with its status; Error
	// says what happened otherwise (no API address known, refused, timed
	// out, or its problem's detail).
	Reachable bool           `json:"reachable"`
	Error     string         `json:"error,omitempty"`
	Status    *ClusterStatus `json:"status,omitempty"`
	// RoundTripMs is how long the member took to answer the gathering
	// node, in milliseconds.
	RoundTripMs int64 `json:"round_trip_ms"`
}

// NodeStorage is the state of one node's data directory: whether its latest
// write to the Raft log succeeded and, while writes fail, how (ErrorKind is
// no_space, read_only, io or other) and for how long; and the sizes. A size
// is -1 where it cannot be read.
type NodeStorage struct {
	Healthy       bool   `json:"healthy"`
	ErrorKind     string `json:"error_kind,omitempty"`
	Error         string `json:"error,omitempty"`
	FailingForMs  int64  `json:"failing_for_ms,omitempty"`
	FreeBytes     int64  `json:"free_bytes"`
	LogBytes      int64  `json:"log_bytes"`
	SnapshotBytes int64  `json:"snapshot_bytes"`
}

// NamespaceRequest is the optional body of PUT /v1/namespaces/{name}: a
// Snowflake layout and lease policy. Nil fields take the defaults below.
type NamespaceRequest struct {
	EpochMs        *int64 `json:"epoch_ms,omitempty"`
	TimestampBits  *uint8 `json:"timestamp_bits,omitempty"`
	WorkerBits     *uint8 `json:"worker_bits,omitempty"`
	SequenceBits   *uint8 `json:"sequence_bits,omitempty"`
	TickMs         *int64 `json:"tick_ms,omitempty"`
	MaxWorkers     *int64 `json:"max_workers,omitempty"`
	LeaseTTLMs     *int64 `json:"lease_ttl_ms,omitempty"`
	RecycleDelayMs *int64 `json:"recycle_delay_ms,omitempty"`
	// Preset names a layout whose fields the request need not give
	// (issue #16): PresetInstagram. A bit field, tick_ms or worker_role
	// given as well must agree with it, or the request is 400.
	Preset string `json:"preset,omitempty"`
	// WorkerRole is WorkerRoleWorker (the default: any free worker id is
	// leased) or WorkerRoleShard (the worker field is a logical shard: a
	// lease must choose its shard, LeaseRequest.WorkerID).
	WorkerRole string `json:"worker_role,omitempty"`
	// HorizonYears is how long the namespace is meant to last (default
	// DefaultHorizonYears, at most 10,000): creating a namespace whose
	// timestamp bits run out sooner succeeds with a warning.
	HorizonYears *int64 `json:"horizon_years,omitempty"`
}

// Layout presets and worker roles of namespaces (issue #16).
const (
	// PresetInstagram is Instagram's shard-embedding layout as it fits a
	// positive int64: 13 bits of logical shard (MaxWorkers 8,192 shards)
	// and 10 of per-shard sequence (1,024 IDs per ms per shard) below the
	// milliseconds, which get 40 bits (34.8 years from the epoch; Instagram's
	// 41 would make IDs negative after 2^40 ms), tick 1 ms, worker role
	// shard, epoch InstagramEpochMs unless given.
	PresetInstagram = "instagram"
	// InstagramEpochMs is the preset's default epoch, 2026-01-01 UTC:
	// its 40 bits of milliseconds last until November 2060.
	InstagramEpochMs int64 = 1767225600000

	WorkerRoleWorker = "worker"
	WorkerRoleShard  = "shard"

	// DefaultHorizonYears is the horizon of a namespace that names none:
	// creating one whose timestamp bits run out within 30 years warns.
	DefaultHorizonYears int64 = 30
)

// Namespace defaults: Twitter's layout (41 bits of milliseconds, 10 of
// worker, 12 of sequence) from 2020-01-01, 30 s leases resting 60 s.
const (
	DefaultEpochMs        int64 = 1577836800000
	DefaultTimestampBits  uint8 = 41
	DefaultWorkerBits     uint8 = 10
	DefaultSequenceBits   uint8 = 12
	DefaultTickMs         int64 = 1
	DefaultLeaseTTLMs     int64 = 30_000
	DefaultRecycleDelayMs int64 = 60_000
)

// Namespace is a Snowflake namespace as the API shows it.
type Namespace struct {
	Name           string `json:"name"`
	EpochMs        int64  `json:"epoch_ms"`
	TimestampBits  uint8  `json:"timestamp_bits"`
	WorkerBits     uint8  `json:"worker_bits"`
	SequenceBits   uint8  `json:"sequence_bits"`
	TickMs         int64  `json:"tick_ms"`
	MaxWorkers     int64  `json:"max_workers"`
	LeaseTTLMs     int64  `json:"lease_ttl_ms"`
	RecycleDelayMs int64  `json:"recycle_delay_ms"`
	// EndMs is the last millisecond the timestamp bits can express;
	// YearsLeft how far that is from the cluster's clock.
	EndMs     int64   `json:"end_ms"`
	YearsLeft float64 `json:"years_left"`
	// WorkerRole is WorkerRoleWorker or WorkerRoleShard; HorizonYears how
	// long the namespace is meant to last (issue #16; absent from older
	// servers' answers).
	WorkerRole   string `json:"worker_role,omitempty"`
	HorizonYears int64  `json:"horizon_years,omitempty"`
}

// NamespaceCreated is the body of the answer to PUT /v1/namespaces/{name}:
// the namespace and, when the cluster found something wrong with a layout
// it accepted (its timestamp bits run out within its horizon), warnings.
type NamespaceCreated struct {
	Namespace
	Warnings []string `json:"warnings,omitempty"`
}

// NamespaceList is the body of GET /v1/namespaces.
type NamespaceList struct {
	Namespaces []Namespace `json:"namespaces"`
}

// LeaseRequest is the body of POST /v1/namespaces/{name}/leases.
type LeaseRequest struct {
	Holder string `json:"holder"`
	// RequestID makes the acquire idempotent: a retry with the same id
	// while the lease it got is still held returns that lease (same
	// worker id and token) instead of a second one. 1 to 128 bytes;
	// optional, but every client that retries should send one.
	RequestID string `json:"request_id,omitempty"`
	// ClientTimeMs is the caller's wall clock (Unix ms) when it sent the
	// request. The cluster records ClientTimeMs + TTL as the highest
	// timestamp this holder may use, and hands it to the worker id's next
	// holder as its TimestampFloorMs, so consecutive holders of one id
	// never overlap in time whatever their clocks read. Optional; without
	// it the cluster can only bound the holder by the leader's stamp.
	ClientTimeMs int64 `json:"client_time_ms,omitempty"`
	// WorkerID, if given, asks for this worker id (a shard's, in a
	// namespace of worker role shard, where it is required) and no other:
	// granted only if it is free, else 409 ProblemWorkerUnavailable.
	WorkerID *int64 `json:"worker_id,omitempty"`
}

// LeaseTokenRequest is the body of renewing or releasing a lease.
type LeaseTokenRequest struct {
	Token uint64 `json:"token"`
	// ClientTimeMs: as in LeaseRequest, for a renewal.
	ClientTimeMs int64 `json:"client_time_ms,omitempty"`
}

// Lease is a worker-id lease. Token fences the holder: it grows with every
// grant, and renewing with an old token fails.
type Lease struct {
	Namespace string `json:"namespace"`
	WorkerID  int64  `json:"worker_id"`
	Holder    string `json:"holder"`
	// Token is shown to the lease's holder only: in the answers to
	// acquire, renew and release, never in listings.
	Token uint64 `json:"token,omitempty"`
	// GrantedMs, ExpiresMs and ReleasedMs are the leaders' wall-clock
	// stamps, for operators: a lease ends only by an entry (a release, a
	// revoke, or the leader's expiry after the TTL has elapsed on its
	// monotonic clock), never because a stamp has passed.
	GrantedMs  int64 `json:"granted_ms"`
	ExpiresMs  int64 `json:"expires_ms"`
	ReleasedMs int64 `json:"released_ms,omitempty"`
	// State is "held", "ended" (the worker id rests for the recycle delay)
	// or "free"; EndReason says what ended it (released, revoked, expired,
	// restored).
	State     string `json:"state,omitempty"`
	EndReason string `json:"end_reason,omitempty"`
	// TTLMs is how long the lease lasts from the moment of the request
	// that granted or renewed it: the holder must stop generating IDs
	// TTLMs after it sent that request unless a renewal succeeded.
	TTLMs int64 `json:"ttl_ms"`
	// Layout is the namespace, so a generator needs only this answer.
	Layout Namespace `json:"layout"`
	// TimestampFloorMs (Unix ms) is the highest timestamp any earlier
	// holder of this worker id may have used: the generator must issue
	// only timestamps above it. 0 when the id was never held before.
	TimestampFloorMs int64 `json:"timestamp_floor_ms,omitempty"`
	// GrantSeq is the sequence number of the lease's grant record in the
	// allocation audit (GET /v1/audit): a public name of the lease, which
	// its token is not. 0 when the audit no longer retains the record.
	GrantSeq uint64 `json:"grant_seq,omitempty"`
}

// LeaseList is the body of GET /v1/namespaces/{name}/leases.
type LeaseList struct {
	Leases []Lease `json:"leases"`
}

// AuditRecord is one block or lease grant.
type AuditRecord struct {
	// Seq numbers the records in order; page with ?after_seq=.
	Seq       uint64 `json:"seq"`
	Index     uint64 `json:"index"`
	Term      uint64 `json:"term"`
	Leader    string `json:"leader,omitempty"`
	TimeMs    int64  `json:"time_ms"`
	Kind      string `json:"kind"`
	Sequence  string `json:"sequence,omitempty"`
	First     int64  `json:"first,omitempty"`
	Last      int64  `json:"last,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	WorkerID  int64  `json:"worker_id,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	PrevEndMs int64  `json:"prev_end_ms,omitempty"`
	PrevToken uint64 `json:"prev_token,omitempty"`
	// PrevFreedIndex is the log index of the entry that freed the worker
	// id for this grant (0 for a first grant or a legacy grant).
	PrevFreedIndex uint64 `json:"prev_freed_index,omitempty"`
	// LegacyClock marks a grant decided by wall-clock stamps (before
	// ticketd's leases moved to the leader's monotonic timers).
	LegacyClock bool `json:"legacy_clock,omitempty"`
}

// AuditList is the body of GET /v1/audit.
type AuditList struct {
	Records []AuditRecord `json:"records"`
	// Retention is how many records the cluster keeps.
	Retention int `json:"retention"`
}

// AuditCheck is the body of GET /v1/audit/check.
type AuditCheck struct {
	BlocksChecked int              `json:"blocks_checked"`
	LeasesChecked int              `json:"leases_checked"`
	Violations    []AuditViolation `json:"violations"`
}

// AuditViolation is something that must never happen.
type AuditViolation struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// SnowflakeInspection is the body of GET /v1/inspect/snowflake/{ns}/{id}.
type SnowflakeInspection struct {
	Namespace string `json:"namespace"`
	ID        int64  `json:"id"`
	TimeMs    int64  `json:"time_ms"`
	Time      string `json:"time"`
	WorkerID  int64  `json:"worker_id"`
	Sequence  int64  `json:"sequence"`
	// Holder names the lease that held the worker id at that time, when
	// the audit still has it. Its token is not shown: a token is its
	// holder's alone (the audit, admin scope, has it).
	Holder string `json:"holder,omitempty"`
	Found  bool   `json:"lease_found"`
	// WorkerRole is the namespace's; Shard, for a namespace of worker role
	// shard, is the shard the ID belongs to (its worker id).
	WorkerRole string `json:"worker_role,omitempty"`
	Shard      *int64 `json:"shard,omitempty"`
}

// RangeInspection is the body of GET /v1/inspect/sequence/{name}/{id}.
type RangeInspection struct {
	Sequence string `json:"sequence"`
	ID       int64  `json:"id"`
	// Block is the block the ID was handed out from, when the audit
	// still has it.
	Block *AuditRecord `json:"block"`
	// Issued is false when the ID lies above the sequence's high-water
	// mark: no leader was ever given it.
	Issued bool `json:"issued"`
}

// MaxSnowflakeIDs is the most IDs one POST /v1/namespaces/{name}/ids (and
// one TICKETD.SNOWFLAKE) hands out.
const MaxSnowflakeIDs = 10_000

// SnowflakeIDsRequest is the body of POST /v1/namespaces/{name}/ids; an
// empty body asks for one ID.
type SnowflakeIDsRequest struct {
	// Count is how many IDs, 1 to MaxSnowflakeIDs (default 1).
	Count *int64 `json:"count,omitempty"`
}

// SnowflakeIDs is the answer of POST /v1/namespaces/{name}/ids: IDs made by
// the answering node's own generator, under its worker-id lease in the
// namespace. They strictly increase within one answer, and from one answer
// of a node to the next that was asked after it was answered; two answers
// made at the same time may interleave (never repeat).
type SnowflakeIDs struct {
	Namespace string `json:"namespace"`
	// Node is the node that made them; WorkerID the worker id of its lease.
	Node     string `json:"node"`
	WorkerID int64  `json:"worker_id"`
	// LeaseGrantSeq names the node's lease the IDs were made under: its
	// grant_seq (the grant's record in GET /v1/audit). Absent when the
	// node cannot name one lease (the IDs spanned a change of lease).
	LeaseGrantSeq uint64 `json:"lease_grant_seq,omitempty"`
	// IDs as JSON numbers, and IDsText the same as decimal strings, for
	// callers whose numbers lose precision above 2^53 (JavaScript).
	IDs     []int64  `json:"ids"`
	IDsText []string `json:"ids_text"`
}

// NodeSnowflake is one node's worker-id lease in one namespace, as the
// node's own Snowflake service sees it (GET /v1/cluster, per node).
type NodeSnowflake struct {
	Namespace string `json:"namespace"`
	// Serving: the node holds a valid lease and its clock is not behind;
	// Reason says why not otherwise.
	Serving  bool   `json:"serving"`
	Reason   string `json:"reason,omitempty"`
	WorkerID int64  `json:"worker_id"` // -1: no lease
	// LeaseRemainingMs is how long the lease lasts without another
	// renewal, by the node's monotonic clock (0: none).
	LeaseRemainingMs int64 `json:"lease_remaining_ms"`
	TimestampFloorMs int64 `json:"timestamp_floor_ms,omitempty"`
	// Issued counts the IDs the node made in the namespace since it started.
	Issued int64 `json:"issued"`
}

// Problem is an RFC 9457 problem details body (application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Leader names the leader when the answering node knows it.
	Leader string `json:"leader,omitempty"`
	// The fields of a ProblemWorkerUnavailable: the worker id asked for,
	// its lease's holder and state ("held", or "ended": resting), what
	// ended it, and an estimate (Unix ms, by the leaders' clocks) of the
	// earliest time it can be had.
	WorkerID       *int64 `json:"worker_id,omitempty"`
	Holder         string `json:"holder,omitempty"`
	State          string `json:"state,omitempty"`
	EndReason      string `json:"end_reason,omitempty"`
	EarliestFreeMs int64  `json:"earliest_free_ms,omitempty"`
	// The fields of a ProblemClusterUpgrading (and of a join refused for
	// its level): the level needed, the cluster's, and the members whose
	// binaries are behind the level needed.
	NeedFeatureLevel    int      `json:"need_feature_level,omitempty"`
	ClusterFeatureLevel int      `json:"cluster_feature_level,omitempty"`
	Behind              []Member `json:"behind,omitempty"`
	// The fields of the Snowflake service's problems: the namespace, the
	// node that answered, and for ProblemClockBehind how far its clock is
	// behind (also as Retry-After, in whole seconds).
	Namespace     string `json:"namespace,omitempty"`
	Node          string `json:"node,omitempty"`
	ClockBehindMs int64  `json:"clock_behind_ms,omitempty"`
}

// Problem types: stable identifiers that clients switch on.
const (
	ProblemBadRequest        = "urn:ticketd:problem:bad-request"
	ProblemNotFound          = "urn:ticketd:problem:sequence-not-found"
	ProblemExhausted         = "urn:ticketd:problem:sequence-exhausted"
	ProblemConflict          = "urn:ticketd:problem:conflict"
	ProblemTooLarge          = "urn:ticketd:problem:body-too-large"
	ProblemUnavailable       = "urn:ticketd:problem:unavailable"
	ProblemMemberNotFound    = "urn:ticketd:problem:member-not-found"
	ProblemInternal          = "urn:ticketd:problem:internal"
	ProblemRouteNotFound     = "urn:ticketd:problem:route-not-found"
	ProblemMethodNotAllowed  = "urn:ticketd:problem:method-not-allowed"
	ProblemUnsupportedMedium = "urn:ticketd:problem:unsupported-media-type"
	ProblemUnauthorized      = "urn:ticketd:problem:unauthorized"
	ProblemForbidden         = "urn:ticketd:problem:forbidden"
	ProblemTooManyRequests   = "urn:ticketd:problem:too-many-requests"
	ProblemNamespaceNotFound = "urn:ticketd:problem:namespace-not-found"
	ProblemNoWorkerFree      = "urn:ticketd:problem:no-worker-free"
	ProblemLeaseLost         = "urn:ticketd:problem:lease-lost"
	// ProblemWorkerUnavailable (409): the worker id a lease request chose
	// is held or resting; the problem names its holder and state.
	ProblemWorkerUnavailable = "urn:ticketd:problem:worker-unavailable"
	// ProblemClusterUpgrading (409): what was asked needs a feature level
	// the cluster has not reached yet (some member runs an older binary);
	// the problem names the level needed, the cluster's, and the members
	// still behind.
	ProblemClusterUpgrading = "urn:ticketd:problem:cluster-upgrading"
	// ProblemClockBehind (503, with Retry-After): the answering node's
	// wall clock is behind timestamps its Snowflake generator must stay
	// above in the namespace (a step back larger than it waits out); that
	// node and namespace only. Another node answers at once.
	ProblemClockBehind = "urn:ticketd:problem:clock-behind"
	// ProblemWorkersExhausted (503): every worker id of the namespace is
	// held or resting, so the answering node could not take one.
	ProblemWorkersExhausted = "urn:ticketd:problem:workers-exhausted"
	// ProblemNoWorkerLease (503): the answering node holds no valid
	// worker-id lease in the namespace now (cut off from the quorum past
	// its lease, or taking a new one); the detail says why. Another node
	// may answer.
	ProblemNoWorkerLease = "urn:ticketd:problem:no-worker-lease"
	// ProblemTimestampExhausted (409): the namespace's timestamp bits ran
	// out; it makes no more IDs.
	ProblemTimestampExhausted = "urn:ticketd:problem:timestamp-exhausted"
)

// MaxBackupBytes is the largest backup POST /v1/restore accepts.
const MaxBackupBytes = 64 << 20
