package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/api"
)

// The errors of a Snowflake generator (snowflake_generator.go), and how the
// cluster's answers to lease requests map onto them.

// Errors of a Snowflake generator (besides those of every call, see
// errors.go). Test for them with errors.Is.
var (
	// ErrLeaseExpired: the generator holds no valid worker-id lease, so it
	// issues nothing (fail-closed): none acquired yet, or the last one's
	// deadline passed without a successful renewal (the cluster was
	// unreachable for longer than the lease covers), or the cluster
	// answered that it was lost and no new one has been acquired yet. The
	// error also wraps the last failure (ErrUnavailable, ErrNoWorkerFree,
	// ErrNamespaceNotFound, ErrUnauthorized, ...). Next recovers by
	// itself once a lease is renewed or acquired.
	ErrLeaseExpired = errors.New("ticketd: no valid worker-id lease")

	// ErrClockMovedBackwards: the wall clock is behind, by more than the
	// bound (WithMaxClockBackward), a timestamp the generator must stay
	// above: one it already used, the start of its lease, or the lease's
	// timestamp floor (the highest timestamp an earlier holder of the
	// worker id may have used, by that holder's clock). Next refuses until
	// the clock has caught up; it never issues an ID that could repeat.
	ErrClockMovedBackwards = errors.New("ticketd: wall clock moved backwards")

	// ErrClockSkew is no longer returned.
	//
	// Deprecated: no longer used: since issue #18 the cluster hands out a
	// timestamp floor with every grant, and the generator does not compare
	// its clock with the cluster's. A clock behind the floor gives
	// ErrClockMovedBackwards.
	ErrClockSkew = errors.New("ticketd: wall clock differs from the cluster's")

	// ErrLeaseLost: the cluster answered that the lease is not held with
	// this token any more (expired, released, revoked). A Snowflake stops
	// issuing under it at once and acquires another.
	ErrLeaseLost = errors.New("ticketd: lease lost")

	// ErrNoWorkerFree: every worker id of the namespace is leased or
	// resting after a lease. A Snowflake keeps trying in the background.
	ErrNoWorkerFree = errors.New("ticketd: no worker id free")

	// ErrNamespaceNotFound: the Snowflake namespace does not exist. A
	// Snowflake keeps trying in the background (an admin may create it).
	ErrNamespaceNotFound = errors.New("ticketd: namespace not found")

	// ErrWorkerUnavailable: the worker id a Snowflake asked for
	// (WithWorkerID: a shard's) is held by another holder, or rests after
	// its lease ended until its recycle delay has passed. The error is a
	// *WorkerUnavailableError (errors.As) saying who holds it and when it
	// may be free. A Snowflake keeps asking in the background; Next and
	// Wait return it wrapped in ErrLeaseExpired meanwhile.
	ErrWorkerUnavailable = errors.New("ticketd: worker id unavailable")
)

// WorkerUnavailableError is the cluster's answer to a lease request that
// chose a worker id that is not free (problem type worker-unavailable). It
// matches ErrWorkerUnavailable with errors.Is, and wraps the *APIError.
type WorkerUnavailableError struct {
	Namespace string
	WorkerID  int64
	// Holder is the holder of the id's lease; State is "held", or "ended"
	// (the id rests for the namespace's recycle delay), EndReason what
	// ended it (released, revoked, expired, restored).
	Holder    string
	State     string
	EndReason string
	// EarliestFree is the cluster's estimate of the earliest time the id
	// can be had (zero if it gave none): for a held lease, its expiry if
	// the holder renews no more, plus the recycle delay. A new leader
	// restarts the wait, so it may come later.
	EarliestFree time.Time
	Err          *APIError
}

func (e *WorkerUnavailableError) Error() string {
	msg := fmt.Sprintf("ticketd: worker %d of %q is held by %q", e.WorkerID, e.Namespace, e.Holder)
	if e.State != "held" {
		msg = fmt.Sprintf("ticketd: worker %d of %q rests after %q's lease ended (%s)", e.WorkerID, e.Namespace, e.Holder, e.EndReason)
	}
	if !e.EarliestFree.IsZero() {
		msg += fmt.Sprintf("; free at the earliest about %s", e.EarliestFree.UTC().Format(time.RFC3339))
	}
	return msg
}

// Is makes errors.Is(err, ErrWorkerUnavailable) hold.
func (e *WorkerUnavailableError) Is(target error) bool { return target == ErrWorkerUnavailable }

// Unwrap is the server's answer.
func (e *WorkerUnavailableError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// ClockBehindError is the ErrClockMovedBackwards of a generator (errors.Is
// holds), with how far the clock is behind what it must stay above: a
// caller can wait that long, or a server can say it as Retry-After.
type ClockBehindError struct {
	// Behind is how long until the wall clock, running on, passes the
	// timestamp the generator must stay above (the last it issued, the
	// start of its lease, or its lease's timestamp floor); 0 when that is
	// not known (a clock before the namespace's epoch).
	Behind time.Duration
	detail string
}

func (e *ClockBehindError) Error() string { return ErrClockMovedBackwards.Error() + ": " + e.detail }

// Is makes errors.Is(err, ErrClockMovedBackwards) hold.
func (e *ClockBehindError) Is(target error) bool { return target == ErrClockMovedBackwards }

func clockBehind(behind int64, format string, args ...any) error {
	return &ClockBehindError{Behind: time.Duration(max(behind, 0)), detail: fmt.Sprintf(format, args...)}
}

// errNoLease is what takeLocked returns when the generator holds no valid
// lease; the slow path turns it into ErrLeaseExpired after waiting.
var errNoLease = errors.New("no valid lease")

// snowflakeError maps the problem types of the Snowflake endpoints, which
// APIError.Is does not know, to this file's sentinels.
func snowflakeError(err error) error {
	var ae *APIError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	switch ae.Problem.Type {
	case api.ProblemLeaseLost:
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case api.ProblemNoWorkerFree:
		return fmt.Errorf("%w: %w", ErrNoWorkerFree, err)
	case api.ProblemNamespaceNotFound:
		return fmt.Errorf("%w: %w", ErrNamespaceNotFound, err)
	// The problems of a node's Snowflake service (POST
	// /v1/namespaces/{name}/ids, issue #32).
	case api.ProblemWorkersExhausted:
		return fmt.Errorf("%w: %w", ErrNoWorkerFree, err)
	case api.ProblemNoWorkerLease:
		return fmt.Errorf("%w: %w", ErrNoWorkerLease, err)
	case api.ProblemTimestampExhausted:
		return fmt.Errorf("%w: %w", ErrExhausted, err)
	case api.ProblemClockBehind:
		cb := &ClockBehindError{Behind: time.Duration(max(ae.Problem.ClockBehindMs, 0)) * time.Millisecond,
			detail: fmt.Sprintf("node %s (%s)", ae.Problem.Node, ae.Endpoint)}
		return fmt.Errorf("%w: %w", cb, err)
	case api.ProblemWorkerUnavailable:
		p := ae.Problem
		e := &WorkerUnavailableError{Holder: p.Holder, State: p.State, EndReason: p.EndReason, Err: ae}
		if p.WorkerID != nil {
			e.WorkerID = *p.WorkerID
		}
		if p.EarliestFreeMs > 0 {
			e.EarliestFree = time.UnixMilli(p.EarliestFreeMs)
		}
		return e
	}
	return err
}
