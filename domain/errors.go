package domain

import (
	"errors"
	"fmt"
)

// The kinds of error a node reports. The node wraps each of its errors so
// that errors.Is finds exactly one kind (Wrap), and keeps its own message; the
// HTTP layer decides status and problem type by the kind and by what the
// request was about (a sequence, a namespace, a member). An error of no kind
// is an internal error.
var (
	// ErrInvalid: the request breaks a rule of the state (a bad backup, a
	// command the state machine refuses, an unreachable member address).
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: the sequence, namespace, lease or member does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: it exists with other settings, or the state does not
	// allow the request (a restore into a cluster that is not empty).
	ErrConflict = errors.New("conflict")
	// ErrExhausted: the sequence would pass its maximum.
	ErrExhausted = errors.New("sequence exhausted")
	// ErrNoWorkerFree: every worker id of the namespace is held or resting.
	ErrNoWorkerFree = errors.New("no worker id free")
	// ErrLeaseLost: the lease has ended or another holder has the worker id.
	ErrLeaseLost = errors.New("lease lost")
	// ErrWorkerUnavailable: the worker id an acquire chose is held, or
	// rests after its lease ended; the error carries a
	// *WorkerUnavailableError.
	ErrWorkerUnavailable = errors.New("worker id unavailable")
	// ErrUnavailable: this node cannot answer now (no leader, leadership
	// lost or not yet confirmed, shutting down, timed out); a retry, here
	// or at the leader, may succeed. A write that failed this way may
	// still have committed.
	ErrUnavailable = errors.New("unavailable")
	// ErrClusterUpgrading: what was asked needs a feature level the
	// cluster has not reached (a member runs an older release), or a
	// joining node does not know the cluster's level; the error carries a
	// *ClusterUpgradingError.
	ErrClusterUpgrading = errors.New("cluster upgrading")
	// ErrClockBehind: this node's wall clock is behind timestamps its
	// Snowflake generator must stay above; the error carries a
	// *ClockBehindError.
	ErrClockBehind = errors.New("clock behind")
	// ErrWorkersExhausted: this node could not take a worker id of the
	// namespace: every one is held or resting.
	ErrWorkersExhausted = errors.New("workers exhausted")
	// ErrNoWorkerLease: this node holds no valid worker-id lease in the
	// namespace now (cut off from the quorum past its lease, or taking a
	// new one).
	ErrNoWorkerLease = errors.New("no worker-id lease")
	// ErrTimestampExhausted: the namespace's timestamp bits ran out.
	ErrTimestampExhausted = errors.New("timestamp exhausted")
)

// ClockBehindError says how far this node's clock is behind what its
// Snowflake generator must stay above; wrap it with the kind ErrClockBehind.
type ClockBehindError struct {
	Namespace string
	BehindMs  int64
	Message   string
}

func (e *ClockBehindError) Error() string { return e.Message }

// ClusterUpgradingError says which feature level was needed, the cluster's,
// and which members are behind; wrap it with the kind ErrClusterUpgrading.
type ClusterUpgradingError struct {
	NeedLevel, ClusterLevel int
	// Behind are the members below NeedLevel (Version, FeatureLevel and
	// LevelReport set as in Member), or the refused joining node.
	Behind  []Member
	Message string
}

func (e *ClusterUpgradingError) Error() string { return e.Message }

// kindError is an error of one kind that keeps the node's own error (and
// its message) underneath.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Wrap marks err as being of kind; errors.Is(result, kind) and errors.Is
// (result, err's own sentinels) both hold, and the message is err's. A nil
// err stays nil.
func Wrap(kind, err error) error {
	if err == nil {
		return nil
	}
	return &kindError{kind: kind, err: err}
}

// Kindf is Wrap of a new error formatted like fmt.Errorf.
func Kindf(kind error, format string, args ...any) error {
	return Wrap(kind, fmt.Errorf(format, args...))
}

// WorkerUnavailableError says who has the worker id an acquire chose and
// when it may be free; wrap it with the kind ErrWorkerUnavailable.
type WorkerUnavailableError struct {
	Namespace string
	WorkerID  int64
	Holder    string
	// State is "held" or "ended" (resting); EndReason what ended it.
	State     string
	EndReason string
	// EarliestFreeMs is an estimate (Unix ms, by the leaders' stamps) of
	// the earliest time the id can be had.
	EarliestFreeMs int64
	// Message is the node's own account of it.
	Message string
}

func (e *WorkerUnavailableError) Error() string { return e.Message }
