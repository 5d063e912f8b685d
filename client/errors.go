package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ticketd/ticketd/api"
)

// Errors a call can return. Test for them with errors.Is: the error a call
// returns wraps one of them and, when the server answered, an *APIError
// with the server's problem details (reach it with errors.As).
var (
	// ErrNotFound: the sequence (or, for RemoveMember, the member) does not
	// exist. Not retried.
	ErrNotFound = errors.New("ticketd: not found")

	// ErrExhausted: the sequence has fewer IDs left than asked for. A
	// sequence never gets IDs back, so a Sequence that saw it keeps
	// returning it once its cache is empty. Not retried. A
	// SnowflakeRemote returns it when the namespace's timestamp bits ran
	// out (problem type timestamp-exhausted).
	ErrExhausted = errors.New("ticketd: sequence exhausted")

	// ErrConflict: the sequence exists with other settings, or a member
	// conflicts with an existing one. Not retried.
	ErrConflict = errors.New("ticketd: conflict")

	// ErrInvalidArgument: the call was malformed: refused by this package
	// before anything was sent (empty or malformed endpoint, count or n
	// out of range, bad sequence name, nil context, bad option), or by the
	// server with 400 or 413. Not retried.
	ErrInvalidArgument = errors.New("ticketd: invalid argument")

	// ErrUnauthorized: the server (or a proxy in front of it) answered 401
	// or 403; check the bearer token. Not retried.
	ErrUnauthorized = errors.New("ticketd: unauthorized")

	// ErrUnavailable: no endpoint could serve the call before its context
	// ended (or the client's call timeout passed). The error also wraps the
	// context's error and the last failure seen.
	//
	// For a reservation the outcome is unknown: the cluster may have
	// reserved a range whose answer was lost. Retrying is safe; the server
	// may waste a range (a gap), never hand one out twice.
	ErrUnavailable = errors.New("ticketd: unavailable")

	// ErrClosed: the Client (and so every Sequence made from it) was
	// closed.
	ErrClosed = errors.New("ticketd: client closed")

	// ErrClusterUpgrading: the call needs a feature level the cluster has
	// not reached yet, because some member still runs an older release (a
	// raise, a shard namespace, a chosen worker id during a rolling
	// upgrade). The *APIError's problem names the level needed, the
	// cluster's, and the members behind (Problem.Behind). Not retried: the
	// level rises by itself, within seconds, once every member runs a
	// release that knows it.
	ErrClusterUpgrading = errors.New("ticketd: cluster upgrading")
)

// APIError is an error answer from the server: its status code and its
// RFC 9457 problem details. It matches the sentinel errors above with
// errors.Is, by problem type and status.
type APIError struct {
	// Endpoint is the base URL of the node that answered.
	Endpoint   string
	StatusCode int
	Problem    api.Problem
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("ticketd: %s answered %d %s", e.Endpoint, e.StatusCode, e.Problem.Title)
	if e.Problem.Detail != "" {
		msg += ": " + e.Problem.Detail
	}
	return msg
}

// Is maps the problem type and status to the package's sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Problem.Type == api.ProblemNotFound || e.Problem.Type == api.ProblemMemberNotFound
	case ErrExhausted:
		return e.Problem.Type == api.ProblemExhausted
	case ErrConflict:
		return e.Problem.Type == api.ProblemConflict
	case ErrClusterUpgrading:
		return e.Problem.Type == api.ProblemClusterUpgrading
	case ErrInvalidArgument:
		return e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusRequestEntityTooLarge
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	case ErrUnavailable:
		return e.StatusCode == http.StatusServiceUnavailable || e.StatusCode == http.StatusTooManyRequests
	}
	return false
}

// retryable reports whether an answer may be retried: 429 and the 5xx
// codes that mean "not now" (500, 502, 503, 504). Every other 4xx is final:
// repeating it would get the same answer.
func (e *APIError) retryable() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// invalidf returns an ErrInvalidArgument with a message.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// unavailableError is what a call returns when its context ended before any
// endpoint served it: ErrUnavailable, the context's error and the last
// failure, all reachable with errors.Is and errors.As.
func unavailableError(ctx context.Context, last error) error {
	cause := context.Cause(ctx)
	if last == nil {
		return fmt.Errorf("%w: no endpoint answered before the context ended: %w", ErrUnavailable, cause)
	}
	return fmt.Errorf("%w: no endpoint could serve before the context ended: %w; last failure: %w", ErrUnavailable, cause, last)
}
